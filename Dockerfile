# Sift: the production image. Multi-stage: build a virtualenv (no torch: the embedding model
# runs on OpenVINO) and the model's ONNX graph, then copy them into a slim, non-root image.
# Weaviate and PostgreSQL run as their own services (see docker-compose.yml).

FROM python:3.11-slim AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 UV_LINK_MODE=copy XDG_CACHE_HOME=/opt/sift/cache
RUN pip install --no-cache-dir uv && uv venv /opt/venv
WORKDIR /app
COPY pyproject.toml README.md ./
COPY bot ./bot
COPY rag ./rag
COPY sync ./sync
COPY storage ./storage
COPY examples ./examples
# Editable: the sample knowledge base in /app/examples stays where the code expects it. uv
# reads pyproject.toml's exclude-dependencies, which keeps sentence-transformers (torch) out.
RUN uv pip install --python /opt/venv/bin/python -e ".[local]"
# Build the embedding model's graphs once (the ONNX graph, then the int8 one the default runs,
# about 10 s), at build time instead of at first start.
RUN /opt/venv/bin/python -c "from rag.embed import LocalEmbedder; LocalEmbedder().encode_now(['warm-up'])"

FROM python:3.11-slim AS runtime
RUN useradd --create-home --uid 10001 sift
COPY --from=build /opt/venv /opt/venv
COPY --from=build --chown=sift:sift /opt/sift/cache /opt/sift/cache
COPY --from=build --chown=sift:sift /app /app
WORKDIR /app
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    XDG_CACHE_HOME=/opt/sift/cache \
    HF_HUB_OFFLINE=1 \
    SIFT_DATA_DIR=/data \
    SIFT_HOST=0.0.0.0 \
    SIFT_PORT=3978
RUN mkdir -p /data && chown sift:sift /data
USER sift
VOLUME ["/data"]
EXPOSE 3978
# Liveness: /livez asks nothing of Weaviate or the database, so a dependency's blip does not
# restart the container; load balancers route on /readyz (docs/operating.md, "Probes").
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD python -c "import urllib.request,sys; urllib.request.urlopen('http://127.0.0.1:3978/livez', timeout=4); sys.exit(0)" || exit 1
CMD ["sift", "serve"]
