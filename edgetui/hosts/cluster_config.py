"""Kubernetes clusters whose SForge pods are supervised: SForge's own settings and the hosts
file's ``[clusters]`` section (core: no Textual; read without loading the Kubernetes client).

SForge's k8s backend reaches its cluster with ``kubectl [--kubeconfig $SFORGE_K8S_KUBECONFIG] -n
$SFORGE_K8S_NAMESPACE`` (../shared/docs/sforge-format.md §7.3): :func:`sforge_cluster` is that
cluster, the kubeconfig's current context. The hosts file may name more (docs/kubernetes.md)::

    [clusters.gpu-pool]
    kubeconfig = "~/.kube/gpu-pool.yaml"   # optional: else $KUBECONFIG or ~/.kube/config
    context = "gpu-pool-admin"            # optional: else the kubeconfig's current context
    namespaces = ["sforge", "sforge-b"]   # where SForge's pods are (default: ["default"])
    via = "gpu-1"                         # optional: a host of [hosts]: its kubeconfig, its connection
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

_NS_RE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


@dataclass(frozen=True)
class ClusterConfig:
    """One cluster: ``kubeconfig`` (a path; None: ``$KUBECONFIG`` or ``~/.kube/config``),
    ``context`` (None: the kubeconfig's current context), ``namespaces`` (where SForge's pods are),
    ``source`` (where it was given)."""

    name: str
    kubeconfig: Optional[str]
    context: Optional[str]
    namespaces: tuple[str, ...]
    source: str = "environment"
    #: the SSH host (a name of the hosts file) whose kubeconfig is read and through whose connection
    #: the API server is reached; ``kubeconfig`` is then a path on that host (default ``.kube/config``
    #: in its home). None: this machine's kubeconfig, the API reached directly
    via: Optional[str] = None


def sforge_cluster(env: Optional[dict[str, str]] = None) -> ClusterConfig:
    """The cluster SForge itself uses: ``SFORGE_K8S_KUBECONFIG`` (else kubectl's default) and
    ``SFORGE_K8S_NAMESPACE`` (default ``default``), the kubeconfig's current context."""
    e = os.environ if env is None else env
    return ClusterConfig(
        "sforge",
        e.get("SFORGE_K8S_KUBECONFIG") or None,
        None,
        (e.get("SFORGE_K8S_NAMESPACE") or "default",),
        "SFORGE_K8S_KUBECONFIG / SFORGE_K8S_NAMESPACE",
    )


def kubeconfig_path(cfg: ClusterConfig) -> Path:
    """The kubeconfig file of ``cfg`` (kubectl's rule: the given one, else the first of
    ``$KUBECONFIG``, else ``~/.kube/config``)."""
    if cfg.kubeconfig:
        return Path(cfg.kubeconfig).expanduser()
    env = os.environ.get("KUBECONFIG")
    if env:
        return Path(env.split(os.pathsep)[0]).expanduser()
    return Path.home() / ".kube" / "config"


def clusters_of(doc: dict[str, Any], where: str) -> list[ClusterConfig]:
    """The ``[clusters.NAME]`` tables of a parsed hosts file. Raises ``ValueError`` with one line
    naming ``where`` (the file) and the table."""
    tables = doc.get("clusters", {})
    if not isinstance(tables, dict):
        raise ValueError(f"{where}: [clusters] must be a table of clusters ([clusters.NAME])")
    out = []
    for name, t in tables.items():
        at = f"{where}: [clusters.{name}]"
        if not isinstance(t, dict):
            raise ValueError(f"{at}: must be a table")
        unknown = set(t) - {"kubeconfig", "context", "namespaces", "via"}
        if unknown:
            raise ValueError(f"{at}: unknown key {sorted(unknown)[0]!r} (kubeconfig, context, namespaces, via)")
        for k in ("kubeconfig", "context", "via"):
            if t.get(k) is not None and not isinstance(t.get(k), str):
                raise ValueError(f"{at}: {k} must be a string")
        nss = t.get("namespaces", ["default"])
        if not isinstance(nss, list) or not nss or not all(isinstance(n, str) and _NS_RE.match(n) for n in nss):
            raise ValueError(f"{at}: namespaces must be a list of namespace names (lower case, digits, -)")
        out.append(
            ClusterConfig(name, t.get("kubeconfig"), t.get("context"), tuple(dict.fromkeys(nss)), where, t.get("via"))
        )
    return out
