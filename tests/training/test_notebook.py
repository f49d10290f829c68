import nbformat
import pytest
from nbclient import NotebookClient

from .helpers import ROOT

pytestmark = pytest.mark.slow


def test_model_evaluation_notebook_executes(monkeypatch):
    # No override: the notebook must find the Bitext sample in the repository on its own.
    monkeypatch.delenv("SWITCHYARD_BITEXT", raising=False)
    path = ROOT / "notebooks" / "model_evaluation.ipynb"
    nb = nbformat.read(path, as_version=4)
    NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    ).execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert any(
        o.output_type == "display_data" and "image/png" in o.get("data", {}) for o in outputs
    )
