"""``pipeline_scaler = "dp_standard"`` (issue 38): a DP scaler with declared bounds, allowed with sensitive training
rows, charged in every fit; configuration errors name their key."""

from __future__ import annotations

import json

import pytest
from cli_helpers import write_config

from privtune.cli import main
from privtune.config import ConfigError, load_config

TEXT = """
[estimator]
class = "privtune.linear_model.DPLogisticRegression"
params = {{ epsilon = 0.3, classes = [0, 1] }}
pipeline_scaler = "{scaler}"
{scaler_params}

[search_space]
C = {{ type = "real", low = 0.1, high = 10.0, log = true }}

[data]
bundled = "breast_cancer"
validation_size = 0.3
sensitive = "both"

[search]
method = "random"
epsilon = 1.0
n_iter = 3
n_candidates = 8
random_state = 0

[storage]
enabled = false

[report]
json = "out/report.json"
"""


def _config(tmp_path, scaler="dp_standard", params='scaler_params = { bounds = [0.0, 5000.0], epsilon = 0.3 }'):
    return write_config(tmp_path, TEXT.format(scaler=scaler, scaler_params=params))


def test_a_dp_scaler_pipeline_is_planned_and_tuned_with_sensitive_training_rows(tmp_path, capsys):
    path = _config(tmp_path)
    assert main(["budget", str(path), "--json"]) == 0
    planned = json.loads(capsys.readouterr().out)
    search = load_config(path).make_search(storage=False)
    assert [type(s).__name__ for _, s in search.estimator.steps] == ["DPStandardScaler", "DPLogisticRegression"]
    assert planned["training_total"]["epsilon"] == pytest.approx(search.privacy_plan(170)["training_total"].epsilon)
    assert planned["largest_fit_epsilon"] is not None  # the estimator's epsilon, the scaler's held fixed
    assert main(["tune", str(path), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "dplogisticregression__C" in out and "charges made by this run: 3" in out


@pytest.mark.parametrize("params, key", [
    ("scaler_params = { epsilon = 0.3 }", "estimator.scaler_params.bounds"),
    ("scaler_params = { bounds = [0.0, 5000.0], epsilom = 0.3 }", "estimator.scaler_params.epsilom"),
    ("scaler_params = { bounds = [5.0, 1.0] }", "estimator.scaler_params.bounds"),
    ("scaler_params = { bounds = [0.0, 1.0], noise = \"uniform\" }", "estimator.scaler_params.noise"),
])
def test_scaler_params_are_checked_naming_the_key(tmp_path, params, key):
    with pytest.raises(ConfigError) as info:
        load_config(_config(tmp_path, params=params))
    assert key in info.value.keys
    if key.endswith("epsilom"):
        assert "did you mean 'epsilon'" in str(info.value)


def test_scaler_params_only_with_the_dp_scaler(tmp_path):
    with pytest.raises(ConfigError) as info:
        load_config(_config(tmp_path, scaler="standard"))
    assert "estimator.scaler_params" in info.value.keys


def test_a_non_private_scaler_with_sensitive_training_rows_points_to_the_dp_one(tmp_path):
    with pytest.raises(ConfigError) as info:
        load_config(_config(tmp_path, scaler="standard", params=""))
    assert info.value.keys == ["estimator.pipeline_scaler"] and "dp_standard" in str(info.value)


def test_an_unaffordable_scaler_names_its_key(tmp_path, capsys):
    path = _config(tmp_path, params='scaler_params = { bounds = [0.0, 5000.0], epsilon = 0.6 }')
    assert main(["budget", str(path)]) == 2
    assert "estimator.scaler_params.epsilon" in capsys.readouterr().err
