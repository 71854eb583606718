"""Microsoft's public-cloud addresses, named once: Graph and the Entra sign-in authority."""

from __future__ import annotations

import httpx

from rag.errors import SyncError

GRAPH_ROOT = "https://graph.microsoft.com"
GRAPH_URL = f"{GRAPH_ROOT}/v1.0"  # the versioned API every Graph call goes to
GRAPH_SCOPE = f"{GRAPH_ROOT}/.default"  # an app token carrying the app's granted permissions
PUBLIC_CLOUD = "https://login.microsoftonline.com"  # the authority outside national clouds


def on_graph(link: str, base: str, label: str) -> str:
    """`link` (a nextLink, deltaLink or Location Graph handed back) when it stays on `base`,
    Graph's versioned root: the app's token goes with every request, so a link elsewhere is
    refused in the source's one sentence, never followed."""
    root, target = httpx.URL(base), httpx.URL(link)
    if (target.scheme, target.host, target.port) != (root.scheme, root.host, root.port):
        raise SyncError(f"link {link} leaves {base}", user_message=f"{label}: Graph sent a "
                        f"link to another host ({target.host}); not followed.")
    return link
