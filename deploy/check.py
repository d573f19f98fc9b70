"""The checks behind deploy/check (run that script, not this file).

Each check is a function that returns a list of problems; the run prints
each check's result and a closing `deploy-check: N passed, M failed` line,
and exits non-zero when any check failed.
"""

import argparse
import http.client
import http.server
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml

DEPLOY = Path(__file__).resolve().parent
ROOT = DEPLOY.parent
K8S = DEPLOY / "k8s"
COMPOSE = DEPLOY / "docker-compose.yml"
NGINX = DEPLOY / "proxy" / "nginx.conf"
DOCKERFILE = DEPLOY / "Dockerfile"
ROUTER_CONFIG = K8S / "router-config.yaml"

SERVICES = ["ingest", "consolidator", "retriever", "forgetter"]
# The routing proxy's upstream names and the service each one must reach.
UPSTREAMS = {"ingest": "mnemo-ingest", "retriever": "mnemo-retriever"}

# Settings the deployment sets that the scale-out adapters read, which are
# being added to the code by other work (PostgreSQL, Kafka, Qdrant). Until
# the code on this tree reads them, they fail the check unless
# --allow-pending is given; once the code reads them they are checked like
# every other name.
PENDING_SETTINGS = {
    "MNEMO_DATABASE_URL",
    "MNEMO_DATABASE_OWNER_URL",
    "MNEMO_KAFKA_BROKERS",
    "MNEMO_QDRANT_URL",
}

# Third-party images must carry an explicit version.
PINNED = re.compile(r"^[a-z0-9./_-]+:(?!latest$)[A-Za-z0-9._-]+$")


def load_all(path):
    with open(path, encoding="utf-8") as handle:
        return [doc for doc in yaml.safe_load_all(handle) if doc is not None]


def yaml_files():
    return sorted(
        p for p in DEPLOY.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file()
    )


def k8s_objects():
    objects = []
    for path in sorted(K8S.glob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        for doc in load_all(path):
            objects.append((path.name, doc))
    return objects


def by_kind(kind):
    return [(f, o) for f, o in k8s_objects() if o.get("kind") == kind]


def compose():
    return load_all(COMPOSE)[0]


# ---------------------------------------------------------------- sources


def code_settings():
    """Every "MNEMO_…" string literal in the Rust sources of libs/ and
    services/: the names the code can read."""
    names = set()
    for top in ("libs", "services"):
        for path in (ROOT / top).rglob("*.rs"):
            names.update(re.findall(r'"(MNEMO_[A-Z0-9_]+)"', path.read_text("utf-8")))
    return names


def routes(crate, module="lib.rs"):
    source = Path("services") / crate / "src" / module
    text = (ROOT / source).read_text("utf-8")
    block = re.search(r"pub const ROUTES: &\[\(&str, &str\)\] = &\[(.*?)\];", text, re.S)
    if not block:
        raise SystemExit(f"no ROUTES list in {source}")
    found = re.findall(r'\(\s*"([A-Z]+)",\s*"([^"]+)"\s*\)', block.group(1))
    if not found:
        raise SystemExit(f"empty ROUTES list in {source}")
    return found


def document_routes():
    """What every service serves besides its own routes: the OpenAPI
    document, the /docs page with its assets, and the admin console."""
    return [("GET", "/openapi.json")] + routes("http", "docs_ui.rs") + routes("http", "console.rs")


def sample_path(template):
    """A concrete path for a route template: each {param} becomes a value."""
    return re.sub(r"\{[^}]+\}", "sample-0192", template)


def dockerfile():
    text = DOCKERFILE.read_text("utf-8")
    binaries = re.search(r'^ARG BINARIES="([^"]+)"', text, re.M)
    uid = re.search(r"useradd[^\n]*--uid (\d+)", text)
    user = re.search(r"^USER (\S+)", text, re.M)
    return {
        "text": text,
        "binaries": binaries.group(1).split() if binaries else [],
        "uid": int(uid.group(1)) if uid else None,
        "user": user.group(1) if user else None,
        "stages": len(re.findall(r"^FROM ", text, re.M)),
    }


# ---------------------------------------------------------------- nginx


def nginx_map(text):
    """The `map "$request_method $uri" $mnemo_service` entries, in order:
    (regex, case_insensitive, upstream)."""
    block = re.search(r'map\s+"\$request_method \$uri"\s+\$mnemo_service\s*\{(.*?)\n\s*\}', text, re.S)
    if not block:
        raise SystemExit("proxy/nginx.conf: no map of \"$request_method $uri\" to $mnemo_service")
    entries = []
    for line in block.group(1).splitlines():
        line = line.split("#", 1)[0].strip()
        match = re.match(r'^"(~\*?)(.*)"\s+(\S+);$', line)
        if match:
            entries.append((match.group(2), match.group(1) == "~*", match.group(3)))
    return entries


def nginx_route(entries, method, path):
    """What nginx's map gives for a request: the first matching regex."""
    key = f"{method} {path}"
    for regex, insensitive, upstream in entries:
        if re.search(regex, key, re.I if insensitive else 0):
            return upstream
    return None


def nginx_upstreams(text):
    return {
        name: re.findall(r"server\s+([^;\s]+)", body)
        for name, body in re.findall(r"upstream\s+(\S+)\s*\{(.*?)\}", text, re.S)
    }


def router_config_text():
    """k8s/router-config.yaml as generated from proxy/nginx.conf."""
    body = NGINX.read_text("utf-8")
    indented = "".join(f"    {line}\n" if line else "\n" for line in body.splitlines())
    return (
        "# GENERATED by `deploy/check --write` from deploy/proxy/nginx.conf: edit\n"
        "# that file, then regenerate. deploy/check fails while the two differ.\n"
        "apiVersion: v1\n"
        "kind: ConfigMap\n"
        "metadata:\n"
        "  name: mnemo-router\n"
        "  namespace: mnemo\n"
        "data:\n"
        "  nginx.conf: |\n"
        f"{indented}"
    )


# ---------------------------------------------------------------- checks


def check_yaml_parses():
    problems = []
    for path in yaml_files():
        try:
            load_all(path)
        except yaml.YAMLError as error:
            problems.append(f"{path.relative_to(ROOT)}: {error}")
    return problems


def check_dockerfile():
    problems = []
    info = dockerfile()
    if info["stages"] < 2:
        problems.append("Dockerfile is not multi-stage")
    wanted = ["mnemo"] + [f"mnemo-{s}" for s in SERVICES]
    missing = [b for b in wanted if b not in info["binaries"]]
    if missing:
        problems.append(f"Dockerfile BINARIES lacks {missing}")
    if "ARG FEATURES" not in info["text"]:
        problems.append("Dockerfile has no FEATURES build argument")
    if info["uid"] in (None, 0) or info["user"] is None or info["user"].split(":")[0] in ("0", "root"):
        problems.append("Dockerfile runtime user is missing or root")
    elif info["user"].split(":")[0] != str(info["uid"]):
        problems.append(f"Dockerfile USER {info['user']} is not the created uid {info['uid']}")
    # The build context is the repository root: keep build output and local
    # secrets out of it.
    ignored = (ROOT / ".dockerignore").read_text("utf-8").split() if (ROOT / ".dockerignore").exists() else []
    for entry in ("target", "deploy/.env"):
        if entry not in ignored:
            problems.append(f".dockerignore does not exclude {entry}")
    return problems


def check_compose():
    problems = []
    services = compose().get("services", {})
    binaries = dockerfile()["binaries"]
    required = {"postgres", "kafka", "kafka-init", "qdrant", "otel-collector", "migrate", "proxy"}
    required |= {f"mnemo-{s}" for s in SERVICES}
    for name in sorted(required - services.keys()):
        problems.append(f"compose: no service {name}")
    for name, service in services.items():
        image = service.get("image")
        if not image:
            problems.append(f"compose {name}: no image")
        elif image.startswith("mnemo:"):
            build = service.get("build") or {}
            dockerfile_path = (COMPOSE.parent / build.get("context", ".") / build.get("dockerfile", "Dockerfile")).resolve()
            if dockerfile_path != DOCKERFILE:
                problems.append(f"compose {name}: mnemo image is not built from deploy/Dockerfile")
            entry = service.get("entrypoint") or []
            binary = Path(entry[0]).name if entry else None
            if binary not in binaries:
                problems.append(f"compose {name}: entrypoint {entry} is not a binary the image installs {binaries}")
        elif not PINNED.match(image):
            problems.append(f"compose {name}: image {image} is not pinned to a version")
        for dependency, condition in (service.get("depends_on") or {}).items():
            if dependency not in services:
                problems.append(f"compose {name}: depends on unknown service {dependency}")
            condition = (condition or {}).get("condition", "service_started")
            if condition == "service_healthy" and "healthcheck" not in services.get(dependency, {}):
                problems.append(f"compose {name}: waits for {dependency} to be healthy, which has no healthcheck")
        for volume in service.get("volumes") or []:
            source = volume.split(":", 1)[0]
            if source.startswith(".") and not (COMPOSE.parent / source).exists():
                problems.append(f"compose {name}: mounts missing file {source}")
    for short in SERVICES:
        service = services.get(f"mnemo-{short}", {})
        test = " ".join(service.get("healthcheck", {}).get("test", []))
        if "/readyz" not in test:
            problems.append(f"compose mnemo-{short}: healthcheck does not probe /readyz")
        depends = service.get("depends_on") or {}
        if (depends.get("migrate") or {}).get("condition") != "service_completed_successfully":
            problems.append(f"compose mnemo-{short}: does not wait for migrate to complete")
        if (depends.get("kafka-init") or {}).get("condition") != "service_completed_successfully":
            problems.append(f"compose mnemo-{short}: does not wait for the topics")
    migrate = services.get("migrate", {})
    if migrate.get("command") != ["migrate"] or Path((migrate.get("entrypoint") or [""])[0]).name != "mnemo":
        problems.append("compose migrate: does not run `mnemo migrate`")
    if str(migrate.get("restart", "no")) != "no":
        problems.append("compose migrate: a one-shot job must not restart")
    kafka_env = services.get("kafka", {}).get("environment", {})
    if "controller" not in str(kafka_env.get("KAFKA_PROCESS_ROLES", "")):
        problems.append("compose kafka: not in KRaft mode (KAFKA_PROCESS_ROLES lacks controller)")
    if not str(services.get("kafka", {}).get("image", "")).startswith("apache/kafka:"):
        problems.append("compose kafka: not the apache/kafka image")
    topics = re.findall(r'pub const [A-Z_]+: &str = "(mnemo\.[a-z.-]+)";',
                        (ROOT / "libs" / "bus" / "src" / "lib.rs").read_text("utf-8"))
    init = " ".join(services.get("kafka-init", {}).get("command") or [])
    for topic in topics:
        if topic not in init:
            problems.append(f"compose kafka-init: does not create topic {topic} (libs/bus topics)")
    otel = services.get("otel-collector", {})
    collector = load_all(DEPLOY / "otel-collector.yaml")[0]
    if "http" not in (collector.get("receivers", {}).get("otlp", {}).get("protocols") or {}):
        problems.append("otel-collector.yaml: no OTLP/HTTP receiver")
    if not any("otel-collector.yaml" in v for v in otel.get("volumes") or []):
        problems.append("compose otel-collector: does not mount deploy/otel-collector.yaml")
    return problems


def check_compose_variables():
    """Every ${VAR} compose interpolates is documented in .env.example."""
    text = COMPOSE.read_text("utf-8")
    used = set(re.findall(r"\$\{([A-Z0-9_]+)", text))
    example = (DEPLOY / ".env.example").read_text("utf-8")
    documented = set(re.findall(r"^([A-Z0-9_]+)=", example, re.M))
    return [f"compose uses ${{{v}}}, which deploy/.env.example does not list" for v in sorted(used - documented)]


def deployed_settings():
    """(where, name) for every MNEMO_* variable the deployment sets."""
    found = []
    for name, service in compose().get("services", {}).items():
        env = service.get("environment") or {}
        keys = env.keys() if isinstance(env, dict) else [e.split("=", 1)[0] for e in env]
        found += [(f"compose {name}", key) for key in keys if key.startswith("MNEMO_")]
    for file, obj in k8s_objects():
        kind = obj.get("kind")
        if kind in ("ConfigMap", "Secret"):
            for key in list((obj.get("data") or {}).keys()) + list((obj.get("stringData") or {}).keys()):
                if key.startswith("MNEMO_"):
                    found.append((f"k8s {file} {kind}/{obj['metadata']['name']}", key))
        for container in pod_containers(obj):
            for env in container.get("env") or []:
                if env["name"].startswith("MNEMO_"):
                    found.append((f"k8s {file} {kind}/{obj['metadata']['name']}", env["name"]))
    for key in re.findall(r"\b(MNEMO_[A-Z0-9_]+)=", DOCKERFILE.read_text("utf-8")):
        found.append(("Dockerfile ENV", key))
    return found


def check_settings(allow_pending, warnings):
    problems = []
    read = code_settings()
    for where, name in deployed_settings():
        if name in read:
            continue
        if name in PENDING_SETTINGS and allow_pending:
            warnings.add(f"{name} (set by the deployment) is not read by the code yet")
            continue
        hint = " yet (pending: other work adds it; --allow-pending warns instead)" if name in PENDING_SETTINGS else ""
        problems.append(f"{where}: sets {name}, which no code under libs/ or services/ reads{hint}")
    return problems


def pod_spec(obj):
    kind = obj.get("kind")
    if kind in ("Deployment", "StatefulSet", "DaemonSet", "Job"):
        return obj["spec"]["template"]["spec"]
    return None


def pod_containers(obj):
    spec = pod_spec(obj)
    return (spec.get("containers") or []) + (spec.get("initContainers") or []) if spec else []


def check_k8s():
    problems = []
    objects = k8s_objects()
    names = {(o["kind"], o["metadata"]["name"]) for _, o in objects}
    compose_images = {s.get("image") for s in compose().get("services", {}).values()}
    info = dockerfile()

    kustomization = load_all(K8S / "kustomization.yaml")[0]
    listed = set(kustomization.get("resources", []))
    for path in sorted(K8S.glob("*.yaml")):
        if path.name in ("kustomization.yaml", "secrets.example.yaml"):
            continue
        if path.name not in listed:
            problems.append(f"k8s kustomization.yaml: does not list {path.name}")
    for resource in listed:
        if not (K8S / resource).exists():
            problems.append(f"k8s kustomization.yaml: lists missing {resource}")

    for file, obj in objects:
        spec = pod_spec(obj)
        if spec is None:
            continue
        where = f"k8s {file} {obj['kind']}/{obj['metadata']['name']}"
        pod_security = spec.get("securityContext") or {}
        if pod_security.get("runAsNonRoot") is not True:
            problems.append(f"{where}: pod does not set runAsNonRoot")
        for container in pod_containers(obj):
            image = container.get("image", "")
            security = container.get("securityContext") or {}
            if security.get("allowPrivilegeEscalation") is not False:
                problems.append(f"{where}: container {container['name']} allows privilege escalation")
            requests = (container.get("resources") or {}).get("requests") or {}
            if not {"cpu", "memory"} <= requests.keys():
                problems.append(f"{where}: container {container['name']} lacks cpu/memory requests")
            if image.split(":")[0] == "mnemo":
                binary = Path((container.get("command") or [""])[0]).name
                if binary not in info["binaries"]:
                    problems.append(f"{where}: command {container.get('command')} is not a binary the image installs")
                if pod_security.get("runAsUser") != info["uid"]:
                    problems.append(f"{where}: runAsUser is not the image's uid {info['uid']}")
            elif image not in compose_images or not PINNED.match(image):
                problems.append(f"{where}: image {image} is neither mnemo nor a pinned image of the compose file")
            for source in container.get("envFrom") or []:
                for key, kind in (("configMapRef", "ConfigMap"), ("secretRef", "Secret")):
                    if key in source and (kind, source[key]["name"]) not in names:
                        problems.append(f"{where}: envFrom {kind} {source[key]['name']} is not defined in deploy/k8s")
        for volume in spec.get("volumes") or []:
            if "configMap" in volume and ("ConfigMap", volume["configMap"]["name"]) not in names:
                problems.append(f"{where}: volume of unknown ConfigMap {volume['configMap']['name']}")

    deployments = {o["metadata"]["name"]: o for _, o in by_kind("Deployment")}
    for short in SERVICES:
        name = f"mnemo-{short}"
        deployment = deployments.get(name)
        if deployment is None:
            problems.append(f"k8s: no Deployment {name}")
            continue
        container = deployment["spec"]["template"]["spec"]["containers"][0]
        if Path(container["command"][0]).name != name:
            problems.append(f"k8s Deployment {name}: runs {container['command']}")
        for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
            if (container.get(probe) or {}).get("httpGet", {}).get("path") != path:
                problems.append(f"k8s Deployment {name}: {probe} does not GET {path}")
        secrets = [s.get("secretRef", {}).get("name") for s in container.get("envFrom") or []]
        if "mnemo-migrate-secrets" in secrets:
            problems.append(f"k8s Deployment {name}: holds the schema owner's credentials")

    services = {o["metadata"]["name"]: o for _, o in by_kind("Service")}
    for name, service in services.items():
        selector = service["spec"].get("selector") or {}
        targets = [d for d in deployments.values()
                   if selector and selector.items() <= d["spec"]["template"]["metadata"]["labels"].items()]
        if not targets:
            problems.append(f"k8s Service {name}: selects no Deployment")
            continue
        ports = {p.get("name") for c in targets[0]["spec"]["template"]["spec"]["containers"] for p in c.get("ports") or []}
        for port in service["spec"]["ports"]:
            if isinstance(port.get("targetPort"), str) and port["targetPort"] not in ports:
                problems.append(f"k8s Service {name}: targetPort {port['targetPort']} is no container port")

    autoscaled = set()
    for _, hpa in by_kind("HorizontalPodAutoscaler"):
        target = hpa["spec"]["scaleTargetRef"]
        if target.get("kind") != "Deployment" or target.get("name") not in deployments:
            problems.append(f"k8s HPA {hpa['metadata']['name']}: targets unknown {target}")
        autoscaled.add(target.get("name"))
    if autoscaled != {"mnemo-ingest", "mnemo-retriever"}:
        problems.append(f"k8s: HPAs scale {sorted(autoscaled)}, expected the stateless ingest and retriever")

    jobs = [o for _, o in by_kind("Job")]
    if not any(c.get("args") == ["migrate"] and Path(c["command"][0]).name == "mnemo"
               for j in jobs for c in pod_containers(j)):
        problems.append("k8s: no Job runs `mnemo migrate`")

    if ROUTER_CONFIG.read_text("utf-8") != router_config_text():
        problems.append("k8s router-config.yaml differs from proxy/nginx.conf: run deploy/check --write")
    elif load_all(ROUTER_CONFIG)[0]["data"]["nginx.conf"] != NGINX.read_text("utf-8"):
        problems.append("k8s router-config.yaml does not hold proxy/nginx.conf byte for byte")
    return problems


def ingress_services():
    """Service names the Ingress sends traffic to, with their port."""
    backends = []
    for _, ingress in by_kind("Ingress"):
        spec = ingress["spec"]
        if "defaultBackend" in spec:
            backends.append(spec["defaultBackend"]["service"])
        for rule in spec.get("rules") or []:
            for path in rule.get("http", {}).get("paths", []):
                backends.append(path["backend"]["service"])
    return backends


def check_routes():
    problems = []
    text = NGINX.read_text("utf-8")
    entries = nginx_map(text)
    upstreams = nginx_upstreams(text)
    compose_services = compose().get("services", {})
    k8s_services = {o["metadata"]["name"]: o for _, o in by_kind("Service")}
    for upstream, service in UPSTREAMS.items():
        servers = upstreams.get(upstream)
        if servers != [f"{service}:8080"]:
            problems.append(f"proxy: upstream {upstream} is {servers}, expected {service}:8080")
        if service not in compose_services:
            problems.append(f"proxy: upstream host {service} is not a compose service")
        ports = [p["port"] for p in (k8s_services.get(service) or {}).get("spec", {}).get("ports", [])]
        if 8080 not in ports:
            problems.append(f"proxy: upstream host {service} is not a k8s Service on 8080")

    expected = [(m, p, "ingest") for m, p in routes("ingest")] + [(m, p, "retriever") for m, p in routes("retriever")]
    declared = {(m, p) for m, p, _ in expected}
    for method, template, upstream in expected:
        got = nginx_route(entries, method, sample_path(template))
        if got != upstream:
            problems.append(f"proxy: {method} {template} goes to {got}, expected {upstream}")
    # A path served for one method must not leak to a service for another.
    for template in {p for _, p, _ in expected}:
        for method in ("GET", "POST", "PUT", "PATCH", "DELETE"):
            if (method, template) not in declared:
                got = nginx_route(entries, method, sample_path(template))
                if got is not None:
                    problems.append(f"proxy: {method} {template} is not a route but goes to {got}")
    for method, path in document_routes():
        if nginx_route(entries, method, path) not in UPSTREAMS:
            problems.append(f"proxy: {method} {path} is not served")
    for path in ("/healthz", "/readyz", "/metrics", "/v1", "/v1/memories", "/v1/subjects/a/b/messages"):
        got = nginx_route(entries, "GET", path)
        if got is not None:
            problems.append(f"proxy: GET {path} is public (goes to {got})")

    # The Ingress routes by sending everything to the router, whose
    # configuration is the one checked above.
    backends = ingress_services()
    if not backends:
        problems.append("k8s: no Ingress backend")
    for backend in backends:
        if backend.get("name") != "mnemo-router":
            problems.append(f"k8s Ingress: sends traffic to {backend.get('name')}, not the method-aware mnemo-router")
        service = k8s_services.get(backend.get("name"))
        port = backend.get("port", {})
        if service is None or not any(p.get("name") == port.get("name") or p.get("port") == port.get("number")
                                      for p in service["spec"]["ports"]):
            problems.append(f"k8s Ingress: backend {backend} is no Service port")
    router = {o["metadata"]["name"]: o for _, o in by_kind("Deployment")}.get("mnemo-router")
    mounts = [v for v in (router or {}).get("spec", {}).get("template", {}).get("spec", {}).get("volumes", [])
              if v.get("configMap", {}).get("name") == "mnemo-router"]
    if not mounts:
        problems.append("k8s mnemo-router: does not mount the router-config ConfigMap")
    return problems


# ---------------------------------------------------------------- tools


def run(command, **kwargs):
    return subprocess.run(command, capture_output=True, text=True, timeout=120, **kwargs)


def compose_command():
    if shutil.which("docker") and run(["docker", "compose", "version"]).returncode == 0:
        return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    return None


def check_compose_config(skipped):
    command = compose_command()
    if command is None:
        skipped.append("docker compose config (no docker compose or docker-compose)")
        return []
    example = (DEPLOY / ".env.example").read_text("utf-8")
    with tempfile.TemporaryDirectory() as scratch:
        env_file = Path(scratch) / "env"
        env_file.write_text(re.sub(r"^([A-Z0-9_]+)=$", r"\1=check-placeholder", example, flags=re.M))
        result = run(command + ["-f", str(COMPOSE), "--env-file", str(env_file), "config", "-q"],
                     env={**os.environ, "COMPOSE_PROJECT_NAME": "mnemo-check"})
    if result.returncode != 0:
        return [f"{' '.join(command)} config -q: {result.stderr.strip() or result.stdout.strip()}"]
    return []


def check_kustomize(skipped):
    if not shutil.which("kubectl"):
        skipped.append("kubectl kustomize (no kubectl)")
        return []
    result = run(["kubectl", "kustomize", str(K8S)])
    if result.returncode != 0:
        return [f"kubectl kustomize: {result.stderr.strip()}"]
    rendered = [d for d in yaml.safe_load_all(result.stdout) if d]
    if any(d.get("metadata", {}).get("namespace") not in (None, "mnemo") for d in rendered):
        return ["kubectl kustomize: an object outside the mnemo namespace"]
    return []


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stub_server(name):
    """An HTTP server that answers every method with its own name."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def answer(self):
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            body = f"{name} {self.command} {self.path}".encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = answer

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def request(port, method, path):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        body = b"{}" if method in ("POST", "PATCH", "PUT") else None
        connection.request(method, path, body=body, headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        return response.status, response.read().decode()
    finally:
        connection.close()


def check_nginx_live(skipped):
    """nginx itself, on this configuration, with stub upstreams."""
    nginx = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
    if nginx is None:
        skipped.append("nginx routing with stub upstreams (no nginx)")
        return []
    problems = []
    stubs = {name: stub_server(name) for name in UPSTREAMS}
    listen = free_port()
    with tempfile.TemporaryDirectory() as scratch:
        config = NGINX.read_text("utf-8")
        for upstream, host in UPSTREAMS.items():
            config = config.replace(f"server {host}:8080;", f"server 127.0.0.1:{stubs[upstream].server_address[1]};")
        config = config.replace("listen 8080;", f"listen 127.0.0.1:{listen};")
        config = config.replace("/tmp/", f"{scratch}/")
        config = config.replace("worker_processes auto;", "worker_processes 1;")
        (Path(scratch) / "nginx.conf").write_text(config)
        test = run([nginx, "-t", "-p", scratch, "-c", f"{scratch}/nginx.conf", "-e", "stderr"])
        if test.returncode != 0:
            return [f"nginx -t: {test.stderr.strip()}"]
        process = subprocess.Popen([nginx, "-p", scratch, "-c", f"{scratch}/nginx.conf", "-e", "stderr",
                                    "-g", "daemon off;"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            deadline = time.time() + 10
            while True:
                try:
                    request(listen, "GET", "/healthz")
                    break
                except OSError:
                    if time.time() > deadline or process.poll() is not None:
                        return ["nginx did not start: " + (process.stderr.read().decode() if process.poll() is not None else "timeout")]
                    time.sleep(0.1)
            expected = [(m, p, "ingest") for m, p in routes("ingest")] + \
                       [(m, p, "retriever") for m, p in routes("retriever")] + \
                       [(m, p, "retriever") for m, p in document_routes()]
            for method, template, upstream in expected:
                path = sample_path(template)
                status, body = request(listen, method, path)
                if status != 200 or not body.startswith(f"{upstream} {method} {path}"):
                    problems.append(f"nginx: {method} {template} -> {status} {body[:60]!r}, expected {upstream}")
            for method, path in (("GET", "/metrics"), ("PUT", "/v1/memories/x"), ("GET", "/v1/subjects/x/messages")):
                status, body = request(listen, method, path)
                if status != 404 or '"not_found"' not in body:
                    problems.append(f"nginx: {method} {path} -> {status} {body[:60]!r}, expected mnemo's 404")
        finally:
            process.terminate()
            process.wait(timeout=10)
            for server in stubs.values():
                server.shutdown()
    return problems


# ---------------------------------------------------------------- main


def main():
    parser = argparse.ArgumentParser(prog="deploy/check")
    parser.add_argument("--allow-pending", action="store_true",
                        help="settings other work adds to the code warn instead of failing")
    parser.add_argument("--write", action="store_true",
                        help="regenerate k8s/router-config.yaml from proxy/nginx.conf")
    args = parser.parse_args()
    if args.write:
        ROUTER_CONFIG.write_text(router_config_text())
        print(f"wrote {ROUTER_CONFIG.relative_to(ROOT)}")

    warnings, skipped = set(), []
    checks = [
        ("every YAML file parses", check_yaml_parses),
        ("the Dockerfile builds every binary as a non-root image", check_dockerfile),
        ("compose services, images, dependencies and topics", check_compose),
        ("compose variables are documented", check_compose_variables),
        ("every MNEMO_* setting is read by the code", lambda: check_settings(args.allow_pending, warnings)),
        ("kubernetes objects reference each other", check_k8s),
        ("every route reaches its service via proxy and Ingress", check_routes),
        ("docker compose config -q", lambda: check_compose_config(skipped)),
        ("kubectl kustomize", lambda: check_kustomize(skipped)),
        ("nginx routes every route to its upstream", lambda: check_nginx_live(skipped)),
    ]
    passed = failed = 0
    for title, check in checks:
        before = len(skipped)
        try:
            problems = check()
        except Exception as error:  # a crash in a check is a failure of it
            problems = [f"{type(error).__name__}: {error}"]
        if problems:
            failed += 1
            print(f"FAIL {title}")
            for problem in problems:
                print(f"     {problem}")
        elif len(skipped) > before:
            print(f"skip {title}: {skipped[-1]}")
        else:
            passed += 1
            print(f"ok   {title}")
    for warning in sorted(warnings):
        print(f"warn {warning}")
    print(f"deploy-check: {passed} passed, {failed} failed, {len(skipped)} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
