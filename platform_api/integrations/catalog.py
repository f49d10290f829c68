"""The integration catalog: one folder per provider under ``providers/``, loaded and validated.

Each folder holds ``integration.yaml`` (identity and auth, validated here) and optionally
``resources.yaml`` (resource mappings, kept as a raw dict: the unified-API engine validates it)
and ``fixtures/``. An integration file that does not validate fails loudly, naming its path.
The loaded integration file is an ``IntegrationManifest`` (``get_manifest``).
"""

from __future__ import annotations

import re
import string
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

PROVIDERS_DIR = Path(__file__).resolve().parent / "providers"
MANIFEST_FILE = "integration.yaml"
RESOURCES_FILE = "resources.yaml"

AuthScheme = Literal["api_key", "basic", "oauth2"]
_NAME = r"^[a-z][a-z0-9_]*$"


class CatalogError(Exception):
    """A provider folder whose integration file is missing, unreadable or invalid."""


def placeholders(template: str) -> set[str]:
    """The ``{name}`` placeholders of a template string."""
    return {field for _, field, _, _ in string.Formatter().parse(template) if field}


class _Strict(BaseModel):
    # Unknown keys are typos in a hand-written integration file: refuse them.
    model_config = ConfigDict(extra="forbid", frozen=True)


class CredentialField(_Strict):
    """One value the connect page asks the end user for."""

    name: str = Field(pattern=_NAME)
    label: str
    secret: bool = True
    required: bool = True
    description: str = ""
    # A regular expression the whole value must match (checked before anything is stored).
    pattern: str | None = None

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, pattern: str | None) -> str | None:
        if pattern is not None:
            re.compile(pattern)
        return pattern


class BasicAuthApply(_Strict):
    username: str
    password: str


class AuthApply(_Strict):
    """How credentials go on an upstream request; values are ``{field}`` templates."""

    headers: dict[str, str] = Field(default_factory=dict)
    query: dict[str, str] = Field(default_factory=dict)
    basic: BasicAuthApply | None = None

    def templates(self) -> list[str]:
        values = [*self.headers.values(), *self.query.values()]
        if self.basic:
            values += [self.basic.username, self.basic.password]
        return values


def _bearer() -> AuthApply:
    return AuthApply(headers={"Authorization": "Bearer {access_token}"})


class OAuth2Spec(_Strict):
    """The OAuth 2.0 authorization-code flow the connect page can run."""

    # URLs may name settings, e.g. "{settings.sandbox_url}/oauth/authorize".
    authorize_url: str
    token_url: str
    default_scopes: list[str] = Field(default_factory=list)
    # Credentials obtained through OAuth (``access_token`` ...) and how they are sent.
    apply: AuthApply = Field(default_factory=_bearer)
    # Only for a provider whose OAuth client is public knowledge (the sandbox); others take
    # the installed integration's ``override.oauth``.
    default_client_id: str | None = None
    default_client_secret: str | None = None


class CredentialCheck(_Strict):
    """A cheap provider call that succeeds only with valid credentials; connecting runs it
    first, so refused credentials create nothing."""

    method: Literal["GET"] = "GET"
    path: str
    query: dict[str, str] = Field(default_factory=dict)


class AuthSpec(_Strict):
    scheme: AuthScheme
    fields: list[CredentialField] = Field(default_factory=list)
    apply: AuthApply = Field(default_factory=AuthApply)
    oauth2: OAuth2Spec | None = None
    check: CredentialCheck | None = None

    @model_validator(mode="after")
    def _consistent(self) -> AuthSpec:
        names = [f.name for f in self.fields]
        if len(names) != len(set(names)):
            raise ValueError("auth.fields: duplicate field names")
        if self.scheme == "oauth2" and self.oauth2 is None:
            raise ValueError("auth.oauth2 is required when auth.scheme is oauth2")
        if self.scheme == "basic" and self.apply.basic is None:
            raise ValueError("auth.apply.basic is required when auth.scheme is basic")
        if self.scheme != "oauth2" and not self.fields:
            raise ValueError(f"auth.fields: a {self.scheme} integration needs credential fields")
        unknown = {p for t in self.apply.templates() for p in placeholders(t)} - set(names)
        if unknown:
            names_text = ", ".join(sorted(unknown))
            raise ValueError(f"auth.apply refers to undeclared fields: {names_text}")
        return self

    def field_names(self, *, required_only: bool = False) -> list[str]:
        return [f.name for f in self.fields if f.required or not required_only]


class IntegrationManifest(_Strict):
    """One provider: identity, auth and (raw) resource mappings."""

    name: str = Field(pattern=_NAME)
    label: str
    category: str = Field(pattern=_NAME)
    # ``{field}`` placeholders come from the account's credentials, its context or
    # ``{settings.<name>}``; an account override ``base_url`` replaces the whole value.
    base_url: str
    # Take resources.yaml from another provider folder (same API, another auth scheme).
    resources_from: str | None = None
    # A regular expression each ``{field}`` value must match in full (default:
    # DEFAULT_VALUE_PATTERN, one DNS label), so a value cannot rewrite the URL's host.
    base_url_patterns: dict[str, str] = Field(default_factory=dict)
    # Hosts provider calls may reach (``api.example.com`` or ``*.example.com``), over https;
    # an override ``base_url`` must name one of them. Default: base_url's host when literal.
    allowed_hosts: list[str] = Field(default_factory=list)
    auth: AuthSpec
    resources: dict[str, Any] | None = None
    directory: Path | None = None

    @model_validator(mode="after")
    def _patterns_compile(self) -> IntegrationManifest:
        for name, pattern in self.base_url_patterns.items():
            if name not in placeholders(self.base_url):
                raise ValueError(f"base_url_patterns.{name}: not a placeholder of base_url")
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"base_url_patterns.{name}: {exc}") from exc
        return self

    @property
    def upstream_hosts(self) -> list[str]:
        """``allowed_hosts``, or base_url's own host when it has no placeholder."""
        if self.allowed_hosts:
            return list(self.allowed_hosts)
        if placeholders(self.base_url):
            return []
        host = urlsplit(self.base_url).hostname
        return [host] if host else []

    @property
    def summary(self) -> dict[str, str]:
        """``{name, label, category}`` as every API record shows an integration."""
        return {"name": self.name, "label": self.label, "category": self.category}


def _read_yaml(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise CatalogError(f"{path}: cannot be read: {exc}") from exc


def load_manifest(directory: Path) -> IntegrationManifest:
    """Load and validate one provider folder."""
    path = directory / MANIFEST_FILE
    if not path.is_file():
        raise CatalogError(f"{path}: missing")
    data = _read_yaml(path)
    if not isinstance(data, dict):
        raise CatalogError(f"{path}: must be a mapping")
    resources_path = directory / RESOURCES_FILE
    if not resources_path.is_file() and isinstance(data.get("resources_from"), str):
        # Another integration's mappings (the same provider API behind another auth scheme).
        resources_path = directory.parent / data["resources_from"] / RESOURCES_FILE
    if resources_path.is_file():
        resources = _read_yaml(resources_path)
        if not isinstance(resources, dict):
            raise CatalogError(f"{resources_path}: must be a mapping")
        data = {**data, "resources": resources}
    try:
        manifest = IntegrationManifest.model_validate({**data, "directory": directory})
    except ValidationError as exc:
        raise CatalogError(f"{path}: invalid manifest:\n{exc}") from exc
    if manifest.name != directory.name:
        raise CatalogError(f"{path}: name {manifest.name!r} differs from its folder name")
    return manifest


def load_catalog(root: Path = PROVIDERS_DIR) -> dict[str, IntegrationManifest]:
    """Every provider under ``root``, by name (folders starting with ``_`` or ``.`` skipped)."""
    catalog = {}
    for directory in sorted(p for p in root.iterdir() if p.is_dir()):
        if re.match(r"[_.]", directory.name):
            continue
        manifest = load_manifest(directory)
        catalog[manifest.name] = manifest
    return catalog


@lru_cache(maxsize=1)
def get_catalog() -> dict[str, IntegrationManifest]:
    """The repository's catalog, loaded once per process."""
    return load_catalog()


def get_manifest(name: str) -> IntegrationManifest | None:
    """The integration file of ``name``, or None when the catalog has no such integration."""
    return get_catalog().get(name)


def name_enum(schema: dict[str, Any]) -> None:
    """JSON-schema hook: an ``integration_name`` is one of the catalog's names."""
    for branch in schema.get("anyOf", [schema]):
        if branch.get("type") == "string":
            branch["enum"] = sorted(get_catalog())
