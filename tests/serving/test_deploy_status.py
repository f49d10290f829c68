"""A failed model deployment is told in one line: the cause Serve buried in its tracebacks."""

from __future__ import annotations

from serving.deploy_status import short_cause, what_to_do

# What Serve reported when the application's import failed (trimmed, nesting kept).
SERVE_BUILD_FAILURE = """Deploying app 'switchyard' failed with exception:
Traceback (most recent call last):
  File "ray/serve/_private/application_state.py", line 926, in _reconcile_build_app_task
    serialized_application_autoscaling_policy_def, args, err = ray.get(
ray.exceptions.RayTaskError(RuntimeError): ray::build_serve_application() (pid=9436)
  File "ray/serve/_private/application_state.py", line 1843, in build_serve_application
    raise RuntimeError(err_str) from None
RuntimeError: Traceback (most recent call last):
  File "ray/serve/_private/application_state.py", line 1737, in build_serve_application
    import_attr(import_path), args
  File "/tmp/fresh/intent/int8_kernels.py", line 16, in <module>
    import onnx
ModuleNotFoundError: No module named 'onnx'
"""


def test_short_cause_is_the_innermost_exception_of_a_serve_failure() -> None:
    assert short_cause(SERVE_BUILD_FAILURE) == "No module named 'onnx'"


def test_short_cause_keeps_a_qualified_exception_and_an_empty_one_by_type() -> None:
    assert short_cause("x\nray.exceptions.ActorDiedError: the actor died") == "the actor died"
    assert short_cause("Traceback\n  File 'a.py'\nKeyboardInterruptError:") == (
        "KeyboardInterruptError"
    )


def test_short_cause_without_an_exception_is_the_last_line() -> None:
    assert short_cause("switchyard not serving after 180s (status DEPLOYING)\n") == (
        "switchyard not serving after 180s (status DEPLOYING)"
    )


def test_what_to_do_about_a_missing_package_is_to_install_the_project() -> None:
    assert "pip install -e ." in what_to_do("No module named 'onnx'")
