"""Who may read a GitHub repository's documents: everyone, or its teams and collaborators."""

from __future__ import annotations

from sync.connectors.github_api import GitHubApi, Repo
from sync.connectors.github_docs import Access


class Readers:
    """Each repository's readers, asked once per run: a public repository is public; a
    private or internal one, its teams and direct collaborators."""

    def __init__(self, api: GitHubApi) -> None:
        self.api = api
        self.known: dict[str, Access] = {}

    async def of(self, repo: Repo) -> Access:
        if repo.full_name not in self.known:
            self.known[repo.full_name] = await self._read(repo)
        return self.known[repo.full_name]

    async def _read(self, repo: Repo) -> Access:
        if repo.visibility == "public":
            return ("public",), ()
        got = await self.api.readers(repo)
        if isinstance(got, str):
            return (), (f"repository {repo.full_name} is {repo.visibility} and its teams and "
                        f"collaborators cannot be listed ({got}; the token needs Administration "
                        "read): visible to nobody",)
        teams, people = got
        # Lower case, as team slugs are: `[[groups]] github_teams` match whatever the case.
        found = [f"github:team:{t.lower()}" for t in teams] + [f"github:user:{p}"
                                                                for p in people]
        if repo.visibility == "internal":  # every member of the enterprise may read it
            found.append(f"github:internal:{repo.full_name.split('/')[0]}")
        if not found:
            return (), (f"repository {repo.full_name} names no team or collaborator: "
                        "visible to nobody",)
        return tuple(found), ()
