# Sift: the production image. Multi-stage: build a virtualenv (no torch: the embedding model
# runs on OpenVINO) and the model's ONNX graph, then copy them into a slim, non-root image.
# Weaviate and PostgreSQL run as their own services (see docker-compose.yml).
# Reproducible: one pinned base image, uv at the version uv.lock pins, and exactly the
# packages in uv.lock (`uv sync --frozen`). Replace the tag by its digest
# (python:3.11.14-slim-bookworm@sha256:...) where your registry mirror allows.

ARG PYTHON_IMAGE=python:3.11.14-slim-bookworm
FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 UV_LINK_MODE=copy XDG_CACHE_HOME=/opt/sift/cache \
    UV_PROJECT_ENVIRONMENT=/opt/venv UV_PYTHON_DOWNLOADS=never
RUN pip install --no-cache-dir uv==0.13.9
WORKDIR /app
# The locked dependencies first (a layer that changes only with uv.lock), then the code.
COPY pyproject.toml uv.lock README.md ./
RUN uv sync --frozen --no-editable --no-install-project --extra local
COPY bot ./bot
COPY rag ./rag
COPY sync ./sync
COPY storage ./storage
COPY evaluation ./evaluation
COPY weaviate_server ./weaviate_server
# Not editable: the code is installed into /opt/venv as a package. uv reads pyproject.toml's
# exclude-dependencies, which keeps sentence-transformers (torch) out.
RUN uv sync --frozen --no-editable --extra local --extra bedrock --extra vertex --extra openai
# The sample knowledge base sits beside the installed packages, where bot/settings.py looks
# (the project root of an installed copy is site-packages).
COPY examples /opt/venv/lib/python3.11/site-packages/examples
# Build the embedding model's graphs once (the ONNX graph, then the int8 one the default runs,
# about 10 s), at build time instead of at first start.
RUN /opt/venv/bin/python -c "from rag.embed import LocalEmbedder; LocalEmbedder().encode_now(['warm-up'])"

FROM ${PYTHON_IMAGE} AS runtime
# Tesseract reads a question's screenshot when no model reads images (files-in-questions.md).
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends tesseract-ocr \
    tesseract-ocr-eng && rm -rf /var/lib/apt/lists/*
RUN useradd --create-home --uid 10001 sift
COPY --from=build /opt/venv /opt/venv
COPY --from=build --chown=sift:sift /opt/sift/cache /opt/sift/cache
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
