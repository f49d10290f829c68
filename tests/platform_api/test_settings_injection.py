"""An app uses the settings it was built with, never the process environment's."""

from __future__ import annotations

import pytest
from cryptography.fernet import Fernet
from fastapi.testclient import TestClient

from core.settings import Settings, get_settings
from platform_api.crypto import decrypt_json
from platform_api.db import session_scope
from platform_api.tables.integrated_account import IntegratedAccount
from switchyard.app import create_app
from tests.platform_api.factories import SHOPIFY_CREDENTIALS, connect, install


def test_credentials_are_sealed_with_the_apps_key_not_the_environments(
    settings: Settings, db: None, auth_headers: dict[str, str]
) -> None:
    own_key = Fernet.generate_key().decode()
    assert own_key != get_settings().encryption_key
    app_settings = settings.model_copy(update={"encryption_key": own_key})
    with TestClient(create_app(app_settings)) as client:
        install(client, auth_headers)
        account_id = connect(client, auth_headers)
        other_id = connect(client, auth_headers, tenant_id="tenant-2")
        # Cursors are signed with the app's key too: the next page reads back in this app.
        first = client.get("/v1/integrated-account?limit=1", headers=auth_headers).json()
        second = client.get(
            "/v1/integrated-account",
            params={"limit": 1, "next_cursor": first["next_cursor"]},
            headers=auth_headers,
        )
        assert second.status_code == 200, second.text
        ids = {first["result"][0]["id"], second.json()["result"][0]["id"]}
        assert ids == {account_id, other_id}

    with session_scope(app_settings) as session:
        stored = session.get(IntegratedAccount, account_id)
        assert stored is not None
        sealed = stored.credentials_encrypted
    assert decrypt_json(sealed, app_settings) == SHOPIFY_CREDENTIALS
    # Under the environment's key the same value does not open: nothing mixed the two.
    with pytest.raises(ValueError, match="cannot be decrypted"):
        decrypt_json(sealed, get_settings())
