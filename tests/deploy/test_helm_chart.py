"""The Helm chart in deploy/helm/sift: `helm lint`, then `helm template` rendered and every
object validated against Kubernetes' own JSON schemas (kubernetes-validate, strict), plus
what Sift needs of it: the right probe for each job, a locked-down pod, settings Sift knows."""

from __future__ import annotations

import os
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from bot.settings import Settings
from bot.settings_check import unknown_env
from weaviate_server.install import PINNED_VERSION

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "deploy" / "helm" / "sift"
KUBERNETES = "1.33.0"  # a version the schemas cover; the chart uses only stable APIs
HELM_VERSION = "v3.22.0"  # as the Makefile builds it


def helm() -> str:
    """The binary `make helm` built (or SIFT_HELM); missing, the test fails, never skips."""
    named = os.environ.get("SIFT_HELM")
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    binary = Path(named) if named else cache / "sift" / "helm" / HELM_VERSION / "helm"
    if not binary.is_file():
        pytest.fail(f"No helm at {binary}: run `make helm` (or `make install`).", pytrace=False)
    return str(binary)


def run(*args: str) -> str:
    done = subprocess.run([helm(), *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr + done.stdout
    return done.stdout


def render(*values: str) -> list[dict[str, Any]]:
    sets = [arg for value in values for arg in ("--set", value)]
    out = run("template", "sift", str(CHART), "--namespace", "sift", *sets)
    return [doc for doc in yaml.safe_load_all(out) if doc]


def by_kind(docs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {doc["kind"]: doc for doc in docs}


def test_the_chart_lints() -> None:
    out = run("lint", str(CHART), "--strict")
    assert "1 chart(s) linted, 0 chart(s) failed" in out


@pytest.mark.parametrize("values", [
    (),
    ("ingress.enabled=true", "autoscaling.enabled=true", "workers=2",
     "ingress.tls[0].secretName=sift-tls", "ingress.tls[0].hosts[0]=sift.example.com"),
    ("podDisruptionBudget.enabled=false", "existingSecret=", "weaviate.apiKeySecret.name="),
])
def test_every_rendered_object_is_valid_kubernetes(values: tuple[str, ...]) -> None:
    docs = render(*values)
    assert docs
    for doc in docs:
        kubernetes_validate.validate(doc, KUBERNETES, strict=True)


def container(docs: list[dict[str, Any]]) -> dict[str, Any]:
    [sift] = by_kind(docs)["Deployment"]["spec"]["template"]["spec"]["containers"]
    return sift


def test_probes_resources_and_a_locked_down_pod() -> None:
    docs = render()
    assert set(by_kind(docs)) == {"ConfigMap", "Service", "Deployment", "PodDisruptionBudget"}
    sift = container(docs)
    assert sift["livenessProbe"]["httpGet"]["path"] == "/livez"  # restarts: the process only
    assert sift["startupProbe"]["httpGet"]["path"] == "/livez"
    assert sift["readinessProbe"]["httpGet"]["path"] == "/readyz"  # traffic: dependencies too
    assert sift["readinessProbe"]["timeoutSeconds"] > 5  # a dependency check takes up to 5 s
    assert sift["resources"]["requests"] and sift["resources"]["limits"]["memory"]
    assert sift["securityContext"]["readOnlyRootFilesystem"] is True
    assert sift["securityContext"]["allowPrivilegeEscalation"] is False
    pod = by_kind(docs)["Deployment"]["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    writable = {m["mountPath"] for m in sift["volumeMounts"] if not m.get("readOnly")}
    assert writable == {"/data", "/tmp"}  # SIFT_DATA_DIR and temporary files, nothing else
    assert by_kind(docs)["Deployment"]["spec"]["replicas"] == 2


def test_replicas_are_left_to_the_autoscaler_and_the_ingress_names_the_public_url() -> None:
    docs = render("ingress.enabled=true", "autoscaling.enabled=true",
                  "ingress.tls[0].secretName=sift-tls", "ingress.tls[0].hosts[0]=sift.example.com")
    kinds = by_kind(docs)
    assert "replicas" not in kinds["Deployment"]["spec"]
    assert kinds["HorizontalPodAutoscaler"]["spec"]["maxReplicas"] == 6
    env = {e["name"]: e.get("value") for e in container(docs)["env"]}
    assert env["SIFT_PUBLIC_URL"] == "https://sift.example.com"
    assert env["SIFT_TRUSTED_PROXIES"] == "10.0.0.0/8"
    rule = kinds["Ingress"]["spec"]["rules"][0]
    assert rule["http"]["paths"][0]["backend"]["service"]["port"]["name"] == "http"


def test_the_chart_sets_only_settings_sift_knows(monkeypatch: pytest.MonkeyPatch) -> None:
    docs = render("ingress.enabled=true")
    sift = container(docs)
    names = {e["name"]: e.get("value", "from a secret") for e in sift["env"]}
    assert unknown_env(names, Settings) is None
    secrets = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in sift["env"] if "valueFrom" in e}
    assert set(secrets) == {"SIFT_DATABASE_URL", "SIFT_WEAVIATE_API_KEY"}
    assert sift["envFrom"] == [{"secretRef": {"name": "sift-secrets"}}]
    # The mounted sift.toml is one Sift accepts, with the chart's environment over it.
    toml = tomllib.loads(by_kind(docs)["ConfigMap"]["data"]["sift.toml"])
    for name, value in names.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("SIFT_DATABASE_URL", "postgresql+psycopg://sift@db/sift")
    monkeypatch.setenv("SIFT_WEAVIATE_API_KEY", "from-the-secret")
    settings = Settings(**toml)
    assert settings.resolved_sources[0].name == "handbook"
    assert settings.trusted_proxies == ["10.0.0.0/8"] and settings.host == "0.0.0.0"
    assert settings.weaviate.grpc_url.endswith(":50051") and not settings.teams.enabled


def test_the_weaviate_values_match_what_sift_runs() -> None:
    values = yaml.safe_load((ROOT / "deploy" / "helm" / "weaviate-values.yaml").read_text())
    assert values["image"]["tag"] == PINNED_VERSION
    assert values["backups"]["filesystem"]["enabled"] is True
    assert values["authentication"]["anonymous_access"]["enabled"] is False
