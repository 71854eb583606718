"""Microsoft's public-cloud addresses, named once: Graph and the Entra sign-in authority."""

from __future__ import annotations

GRAPH_ROOT = "https://graph.microsoft.com"
GRAPH_URL = f"{GRAPH_ROOT}/v1.0"  # the versioned API every Graph call goes to
GRAPH_SCOPE = f"{GRAPH_ROOT}/.default"  # an app token carrying the app's granted permissions
PUBLIC_CLOUD = "https://login.microsoftonline.com"  # the authority outside national clouds
