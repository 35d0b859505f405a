"""The planted bugs of tools/mutation_check.py still fit the code: each plant's text occurs exactly
once where it says, its driver exists, and every lab of the registry has a plant. (Whether the
sanitizers catch them is for the GPU machine: tools/gpu-check.sh runs the check itself.)"""

import importlib.util
import os
import sys
import time

import pytest

import gpulab as gl

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def load_check():
    spec = importlib.util.spec_from_file_location(
        "mutation_check", os.path.join(ROOT, "tools", "mutation_check.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CHECK = load_check()


@pytest.mark.parametrize("plant", CHECK.PLANTS, ids=lambda p: p.name)
def test_plant_applies_once(plant, tmp_path):
    src = os.path.join(ROOT, plant.file)
    tree = tmp_path / "tree"
    (tree / os.path.dirname(plant.file)).mkdir(parents=True)
    with open(src) as f:
        original = f.read()
    (tree / plant.file).write_text(original)
    CHECK.plant_into(str(tree), plant)
    planted = (tree / plant.file).read_text()
    assert planted != original and plant.replace in planted
    assert os.path.isfile(os.path.join(ROOT, "tools", "sanitize", plant.driver[0]))
    assert plant.tool in ("memcheck", "initcheck", "racecheck", "synccheck", "result")


def test_a_plant_that_no_longer_fits_is_refused(tmp_path):
    plant = CHECK.PLANTS[0]
    (tmp_path / os.path.dirname(plant.file)).mkdir(parents=True)
    (tmp_path / plant.file).write_text("// the kernel was rewritten\n")
    with pytest.raises(ValueError, match="occurs 0 times"):
        CHECK.plant_into(str(tmp_path), plant)


def test_every_lab_has_a_plant():
    assert CHECK.labs() == gl._core.labs()
    assert not CHECK.labs_without_plants()
    assert {p.lab for p in CHECK.PLANTS} <= set(gl._core.labs())


def test_every_kind_of_bug_is_planted():
    kinds = " | ".join(p.kind for p in CHECK.PLANTS)
    for kind in ("off-by-one global write", "read one past the end", "missing __syncthreads()",
                 "uninitialized shared memory"):
        assert kind in kinds


def test_sanitizer_summaries_are_read():
    assert CHECK.reported("memcheck", "========= ERROR SUMMARY: 3 errors") == 3
    assert CHECK.reported("memcheck", "========= ERROR SUMMARY: 0 errors") == 0
    assert CHECK.reported("racecheck", "========= RACECHECK SUMMARY: 12 hazards displayed "
                                       "(12 errors, 0 warnings)") == 12
    assert CHECK.reported("initcheck", "no summary at all") == 0


def test_a_sanitizer_run_reports_its_summary(tmp_path, monkeypatch):
    monkeypatch.setattr(CHECK, "RUN_TIMEOUT_S", 60)
    said = "print('========= ERROR SUMMARY: 3 errors')"
    result = CHECK.run_sanitizer(str(tmp_path), "memcheck", ("scan.py",), str(tmp_path / "log"),
                                 command=[sys.executable, "-c", said])
    assert result["finished"] and result["reported"] == 3 and result["exit"] == 0
    assert result["summary"] == ["ERROR SUMMARY: 3 errors"]


def test_a_sanitizer_run_past_its_timeout_is_not_finished(tmp_path, monkeypatch):
    """A run that hangs (racecheck over a large driver can) is stopped and recorded as not
    finished: neither caught nor clean, and what it printed is kept in its log."""
    monkeypatch.setattr(CHECK, "RUN_TIMEOUT_S", 1)
    # like compute-sanitizer, the command runs the driver as its own child: both must go
    pid_file = tmp_path / "child.pid"
    slow = ("import subprocess, sys, time; child = subprocess.Popen([sys.executable, '-c', "
            "'import time; time.sleep(60)']); open(sys.argv[1], 'w').write(str(child.pid)); "
            "print('started', flush=True); time.sleep(60)")
    result = CHECK.run_sanitizer(str(tmp_path), "racecheck", ("scan.py",), str(tmp_path / "log"),
                                 command=[sys.executable, "-u", "-c", slow, str(pid_file)])
    assert not result["finished"] and result["reported"] == 0 and result["exit"] is None
    assert result["summary"] == ["not finished in 1 s"] and result["seconds"] < 20
    assert "started" in (tmp_path / "log").read_text()
    child = int(pid_file.read_text())
    for _ in range(100):  # the killed child is reaped by init shortly after
        stat = f"/proc/{child}/stat"
        if not os.path.exists(stat) or open(stat).read().split()[2] == "Z":
            break
        time.sleep(0.05)
    else:
        raise AssertionError(f"the command's child {child} outlived the timeout")
