import numpy as np

from intent.evaluation import expected_calibration_error
from intent.probabilities import softmax
from training import calibrate
from training.evaluate import most_confused_pairs


def _synthetic(true_temperature, n=4000, k=10, seed=0):
    rng = np.random.default_rng(seed)
    base = rng.normal(0, 2.0, size=(n, k))
    probs = softmax(base)
    y = np.array([rng.choice(k, p=p) for p in probs])
    # Logits that are over-confident by a factor true_temperature.
    return base * true_temperature, y


def test_fit_temperature_recovers_the_overconfidence_factor():
    logits, y = _synthetic(3.0)
    t = calibrate.fit_temperature(logits, y)
    assert 2.6 < t < 3.4


def test_temperature_scaling_lowers_ece_of_overconfident_logits():
    logits, y = _synthetic(3.0)
    before = expected_calibration_error(softmax(logits), y)
    after = expected_calibration_error(softmax(logits, calibrate.fit_temperature(logits, y)), y)
    assert before > 0.1
    assert after < 0.03


def test_ece_is_zero_when_confidence_equals_accuracy():
    probs = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    assert expected_calibration_error(probs, np.array([0, 0, 1])) == 0.0
    assert expected_calibration_error(probs, np.array([1, 0, 1])) > 0.3


def test_most_confused_pairs_counts_errors_only():
    y_true = np.array([0, 0, 0, 1, 1])
    y_pred = np.array([1, 1, 0, 0, 1])
    pairs = most_confused_pairs(y_true, y_pred)
    assert pairs[0] == {"true": "track_order", "predicted": "cancel_order", "count": 2}
    assert sum(p["count"] for p in pairs) == 3
