"""SQLModel tables and their API shapes, one module per entity family.

Every module in this package is imported here so Alembic and ``SQLModel.metadata`` see all
tables without a central list to edit.
"""

import importlib
import pkgutil

from sqlmodel import SQLModel

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")

metadata = SQLModel.metadata
