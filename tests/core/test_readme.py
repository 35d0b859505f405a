"""README.md is the user's door: its tour runs as written (here, with or without a GPU), it stays
a manual of at most 200 lines, and it, CONTRIBUTING.md and the docs point only inside the
repository."""

import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCS = ["README.md", "CONTRIBUTING.md"] + sorted(
    os.path.relpath(os.path.join(folder, f), ROOT)
    for folder, _, files in os.walk(os.path.join(ROOT, "docs")) for f in files if f.endswith(".md"))
# Names of files that live outside this repository, and diary that has no place in a manual.
OUTSIDE = re.compile(r"LABS\.md|ANCHORS\.md|DESIGN\.md|STYLE\.md|NOTES\.md|\.\./shared|/work/")
DIARY = re.compile(r"\bissues? \d+\b|\b[0-9a-f]{7,40}\b(?=[),;: ]|$)|\b20\d\d-\d\d-\d\d\b")


def read(name):
    with open(os.path.join(ROOT, name), encoding="utf-8") as f:
        return f.read()


def python_blocks(text):
    return re.findall(r"```python\n(.*?)```", text, re.S)


def test_readme_is_a_manual_of_at_most_200_lines():
    text = read("README.md")
    assert len(text.splitlines()) <= 200
    assert not DIARY.findall(text), DIARY.findall(text)


def test_readme_tour_runs_as_written(tmp_path, monkeypatch):
    """The first python block of README.md, executed unchanged outside the source tree."""
    tour = python_blocks(read("README.md"))[0]
    monkeypatch.chdir(tmp_path)
    exec(compile(tour, "README.md tour", "exec"), {"__name__": "__main__"})


def test_readme_commands_are_the_ones_ci_runs():
    text = read("README.md")
    assert "python3 -m pip install -e . && python3 -m gpulab" in text
    marked = text.split("<!-- test command -->", 1)[1]
    command = 'python3 -m pip install -e ".[test]" && python3 -m pytest -n auto'
    assert marked.lstrip().startswith(f"```bash\n{command}\n```")


@pytest.mark.parametrize("name", DOCS)
def test_links_and_names_stay_inside_the_repository(name):
    text = read(name)
    assert not OUTSIDE.findall(text), f"{name} names {OUTSIDE.findall(text)}"
    folder = os.path.dirname(os.path.join(ROOT, name))
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
        if re.match(r"[a-z]+:", target):  # a web address or mailto:
            continue
        path = os.path.normpath(os.path.join(folder, target))
        assert path.startswith(ROOT + os.sep) and os.path.exists(path), \
            f"{name}: {target} does not resolve"


def test_every_lab_has_a_page_that_readme_links():
    text = read("README.md")
    with open(os.path.join(ROOT, "csrc", "labs", "labs.def")) as f:
        labs = re.findall(r"^GL_LAB\((\w+)\)", f.read(), re.M)
    for lab in labs:
        assert f"(docs/labs/{lab}.md)" in text, lab
        assert os.path.exists(os.path.join(ROOT, "docs", "labs", f"{lab}.md")), lab
