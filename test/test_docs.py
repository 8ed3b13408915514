"""The documentation cannot drift from the code: the site builds with warnings as errors (and
with rosdoc2, docs.ros.org's builder), the generated reference lists everything the code has,
every `indgen ...` command and every config key the pages mention exists, the README's quick
commands run from a clean data directory, and the built site loads in a real browser with no
console error and every image and asset in place."""

from __future__ import annotations

import argparse
import functools
import http.server
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import ClassVar

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
sys.path.insert(0, str(DOCS / "_ext"))

import indgen_reference as reference  # noqa: E402  (docs/_ext is not a package)

BIN = Path(sys.executable).parent


def written_pages() -> list[Path]:
    """The hand-written Markdown a reader sees: README and the docs, not the generated reference."""
    pages = [REPO / "README.md", REPO / "CONTRIBUTING.md", REPO / "SECURITY.md"]
    pages += [p for p in DOCS.rglob("*.md") if "_build" not in p.parts and "reference" not in p.parts]
    return [p for p in pages if p.exists()]


def code_texts(text: str) -> list[str]:
    """The code a page shows: fenced blocks and inline spans."""
    blocks = re.findall(r"^```[^\n]*\n(.*?)^```", text, re.S | re.M)
    rest = re.sub(r"^```[^\n]*\n.*?^```", "", text, flags=re.S | re.M)
    return blocks + re.findall(r"`([^`\n]+)`", rest)


def yaml_blocks(text: str) -> list[str]:
    return re.findall(r"^```yaml\n(.*?)^```", text, re.S | re.M)


# -- building the site --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run(
        [str(BIN / "sphinx-build"), "-W", "--keep-going", "-q", "-b", "html", str(DOCS), str(out)],
        capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, f"make docs fails:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    return out


def test_the_site_builds_with_warnings_as_errors_and_has_every_page(site):
    for page in ("index", "install", "quickstart", "concepts/axes", "statistics", "guides/real-fr3", "security",
                 "reference/cli", "reference/config", "reference/nodes", "reference/graph-profiles",
                 "reference/interfaces", "architecture", "development"):
        assert (site / f"{page}.html").is_file(), page
    # a broken link between pages is a warning, so an error: show that the build would catch one
    # (in a copy of the tree: the repository's docs/ is never written to by a test)
    copy = site.parent / "probe-tree"
    shutil.copytree(DOCS, copy / "docs", ignore=shutil.ignore_patterns("_build", "reference"))
    for part in ("config", "src"):
        (copy / part).symlink_to(REPO / part)
    (copy / "docs" / "broken.md").write_text("# Probe\n\n[nowhere](no-such-page.md)\n")
    proc = subprocess.run([str(BIN / "sphinx-build"), "-W", "-q", "-b", "html", str(copy / "docs"), str(copy / "out")],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode != 0 and "no-such-page" in proc.stderr


def test_rosdoc2_builds_the_same_tree(tmp_path):
    """docs.ros.org builds a ROS package's documentation with rosdoc2; rosdoc2.yaml points it at
    docs/. rosdoc2 also copies the README and CHANGELOG into its own tree, where the README's
    links (relative to the repository, as a reader on the forge follows them) cannot resolve:
    those warnings are its copies', and our pages must have none."""
    proc = subprocess.run(
        [str(BIN / "rosdoc2"), "build", "--package-path", str(REPO), "--doc-build-directory", str(tmp_path / "b"),
         "--output-directory", str(tmp_path / "o"), "--cross-reference-directory", str(tmp_path / "x")],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-4000:]
    html = tmp_path / "o" / "indgen"
    assert (html / "index.html").is_file() and (html / "reference" / "nodes.html").is_file(), log[-2000:]
    # the generated pages are whole there too (rosdoc2 builds from a copy of docs/)
    assert "max_image_age_s" in (html / "reference" / "nodes.html").read_text()
    assert "stack_axis" in (html / "reference" / "graph-profiles.html").read_text()
    assert "OperatorPrompt" in (html / "reference" / "interfaces.html").read_text()
    ours = [line for line in log.splitlines() if "WARNING" in line and "wrapped_sphinx_directory/" in line
            and "standard_docs/" not in line]
    assert ours == []


# -- the generated reference lists everything ---------------------------------------------------
def test_the_cli_reference_lists_every_command_and_option():
    from indgen_core.cli import build_parser

    page = reference.cli_page()
    commands = list(reference.cli_commands(build_parser()))
    assert len(commands) > 30  # 35 today: indgen, its sub-commands and theirs
    rows = [line for line in page.splitlines() if line.startswith("| `")]
    for words, parser in commands:
        assert f"## {' '.join(words)}\n" in page
        for action in parser._actions:
            if action.help == argparse.SUPPRESS or isinstance(action, argparse._HelpAction):
                continue
            for option in action.option_strings:  # each in a row of its command's options table
                assert any(f"`{option}`" in row.split(" | ")[0] for row in rows), (words, option)


def test_the_config_reference_lists_every_key_of_every_file():
    page = reference.config_page()
    for _, _, module, name in reference.CONFIG_FILES:
        import importlib

        model = getattr(importlib.import_module(module), name)
        keys = reference.config_keys(model)
        assert set(model.model_fields) <= {k.split(".")[0].split("[")[0] for k in keys} | {
            f.alias for f in model.model_fields.values() if f.alias}
        for key in keys:
            assert f"`{key}`" in page, key
    # a nested key, a default and a description from a `#:` comment
    assert "`adaptive.min_trials`" in page and "`arm.velocity_fraction`" in page
    assert "the runner commands at most these fractions of them" in page
    # every key says what it is: a `description=` or a `#:` comment above the field
    for _, _, module, name in reference.CONFIG_FILES:
        model = getattr(importlib.import_module(module), name)
        empty = [row[0] for row in reference.config_rows(model) if not row[3].strip()]
        assert empty == [], f"{name}: keys without a description: {empty}"


def test_the_node_reference_lists_every_parameter_and_endpoint_of_every_node():
    import dataclasses
    import importlib

    page = reference.nodes_page()
    nodes = reference.node_modules()
    assert {n for n, _ in nodes} >= {"progression_manager", "scorer", "recorder", "sim_bridge", "policy_node",
                                    "fr3_runner", "camera_node", "fr3_stand_in", "fr3_cameras"}
    for executable, module_name in nodes:
        parameters, endpoints = reference.node_declarations(executable, module_name)
        assert f"## {executable}\n" in page
        assert dataclasses.fields(parameters) and endpoints, executable
        for p in dataclasses.fields(parameters):
            assert f"| `{p.name}` |" in page and p.metadata["help"], (executable, p.name)
        for e in endpoints:
            assert f"`{e.name}`" in page and e.help, (executable, e.name)
        # the node itself reads these very declarations
        module = importlib.import_module(module_name)
        assert module.Parameters is parameters
        node_class = next(v for v in vars(module).values() if isinstance(v, type) and getattr(v, "ENDPOINTS", None))
        assert node_class.ENDPOINTS is endpoints


def test_the_reference_is_generated_without_ros():
    """An analyst's laptop or a docs builder without ROS: the pages still come out whole."""
    from helpers.no_ros import python_without_ros

    script = (
        f"import sys; sys.path.insert(0, {str(DOCS / '_ext')!r}); import indgen_reference as r\n"
        "page = r.nodes_page() + r.config_page() + r.cli_page()\n"
        "assert 'fr3_runner' in page and 'max_image_age_s' in page and 'trials_per_level' in page\n"
        "print('ok', len(page))\n"
    )
    proc = python_without_ros(script)
    assert proc.returncode == 0 and proc.stdout.startswith("ok"), proc.stderr[-3000:]


def test_the_profile_and_interface_references_list_every_argument_and_definition():
    page = reference.profiles_page()
    for path in (REPO / "config" / "graphs").glob("*.yaml"):
        data = yaml.safe_load(path.read_text())
        assert f"## {path.stem}\n" in page
        for name in data.get("arguments", {}):
            assert f"| `{name}` |" in page, (path.stem, name)
    assert "$(not name)" in page  # the language itself, from graph.py
    page = reference.interfaces_page()
    for path in (REPO / "src" / "indgen_msgs").rglob("*.*"):
        if path.suffix in (".msg", ".srv", ".action"):
            assert f"indgen_msgs/{path.suffix[1:]}/{path.stem}\n" in page
            assert path.read_text().strip().splitlines()[0] in page


def test_the_specs_reference_lists_every_key_of_every_spec():
    from indgen_core import registry

    page = reference.specs_page()
    for name in registry.names(registry.SPECS):
        spec = registry.load(registry.SPECS, name)
        assert f"## {name}\n" in page and spec.request_fields and spec.reply_fields
        for f in (*spec.request_fields, *spec.reply_fields):
            assert f"| `{f.key}" in page and f.meaning.split()[0] in page, (name, f.key)


# -- what the pages mention exists --------------------------------------------------------------
def shell_commands(snippet: str) -> list[str]:
    """The `indgen ...` commands of a snippet: at the start of a line or after ; && || | ( or
    a prompt, comments dropped (`ros2 launch indgen ...` names the package, not the command)."""
    found = []
    for raw in snippet.splitlines():
        line = raw.split(" #", 1)[0] if not raw.lstrip().startswith("#") else ""
        for part in re.split(r";|&&|\|\||\||\(|\$ ", line):
            command = part.strip()
            if command == "indgen" or command.startswith("indgen "):
                found.append(command)
    return found


PLACEHOLDER = re.compile(r"^(-.*|[A-Z][A-Z0-9_.]*|\.\.\..*|<.*|\[.*|\$.*|.*[:=/].*|\d.*)$")


def test_every_indgen_command_the_pages_mention_exists():
    from indgen_core.cli import build_parser

    tree: dict[tuple[str, ...], set[str] | None] = {}
    for words, parser in reference.cli_commands(build_parser()):
        subs = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
        tree[words] = set(subs[0].choices) if subs else None
    checked, unknown = 0, []
    for page in written_pages():
        for snippet in code_texts(page.read_text()):
            for command in shell_commands(snippet):
                words, path = command.split()[1:], ("indgen",)
                for word in words:
                    choices = tree.get(path)
                    if choices is None or PLACEHOLDER.match(word):
                        break
                    if word not in choices:
                        unknown.append(f"{page.relative_to(REPO)}: {' '.join(path)} {word}")
                        break
                    path = (*path, word)
                    checked += 1
    assert unknown == []
    assert checked > 100  # the pages do mention commands: the scan found them


def _unknown_keys(model, data, prefix="") -> list[str]:
    """Keys of `data` the model does not have, recursively (by alias where a field has one)."""
    from pydantic import BaseModel

    if not isinstance(data, dict):
        return []
    fields = {(f.alias or n): f for n, f in model.model_fields.items()}
    unknown = []
    for key, value in data.items():
        field = fields.get(key)
        if field is None:
            unknown.append(prefix + str(key))
            continue
        for inner in reference.inner_models(field.annotation):
            assert issubclass(inner, BaseModel)
            values = value if isinstance(value, list) else (
                list(value.values()) if isinstance(value, dict) and "dict[" in repr(field.annotation) else [value])
            for item in values:
                unknown += _unknown_keys(inner, item, f"{prefix}{key}.")
    return unknown


def _model_of(data: dict):
    from indgen_core.axes.spec import AxisSpec
    from indgen_core.campaign.config import CampaignConfig
    from indgen_core.cell.robot_config import RobotConfig
    from indgen_core.graph import ProfileSpec

    keys = set(data)
    if {"axis", "world"} & keys and {"policies", "trials_per_level", "name"} & keys:
        return CampaignConfig
    if "parameter" in keys or "worlds" in keys:
        return AxisSpec
    if {"arguments", "nodes"} & keys:
        return ProfileSpec
    if {"arm", "gripper", "control", "reset", "recovery", "cameras"} & keys:
        return RobotConfig
    return None


def test_every_config_key_the_pages_show_exists():
    checked, unknown = 0, []
    for page in written_pages():
        for block in yaml_blocks(page.read_text()):
            try:
                data = yaml.safe_load(block)
            except yaml.YAMLError:
                continue  # an excerpt with "..." in it: no keys to check
            model = _model_of(data) if isinstance(data, dict) else None
            if model is None:
                continue
            checked += 1
            where = f"{page.relative_to(REPO)}: {model.__name__}"
            unknown += [f"{where} has no key '{k}'" for k in _unknown_keys(model, data)]
    assert unknown == []
    assert checked >= 3
    campaign = _model_of({"name": "x", "axis": "a", "policies": []})
    assert _unknown_keys(campaign, {"name": "x", "trials": 3}) == ["trials"]  # the check does catch one


# -- the README's quick commands ----------------------------------------------------------------
def test_the_readmes_own_policy_commands_run_from_a_clean_data_directory(tmp_path):
    """The commands of "Your own policy, in three commands", exactly as the README shows them
    (its `export` line included), in a fresh directory with a fresh results store (the
    repository's config/ and examples/ beside it, as in a clone)."""
    readme = (REPO / "README.md").read_text()
    block = re.search(r"## Your own policy, in three commands.*?```bash\n(export .*?)```", readme, re.S)
    assert block, "the README's own-policy commands are where this test looks for them"
    for folder in ("config", "examples"):
        (tmp_path / folder).symlink_to(REPO / folder)
    env = {**os.environ, "INDGEN_DB": str(tmp_path / "results.sqlite"), "INDGEN_ARTIFACTS": str(tmp_path / "art"),
           "XDG_DATA_HOME": str(tmp_path / "data"), "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    lines = [line.split("#", 1)[0].strip() for line in block.group(1).splitlines()]
    lines = [line for line in lines if line]
    exports, commands = lines[0].split()[1:], lines[1:]
    env |= dict(item.replace("$PWD", str(tmp_path)).split("=", 1) for item in exports)
    assert [c.split()[:3] for c in commands] == [["indgen", "campaign", "run"], ["indgen", "policy", "check"],
                                                 ["indgen", "campaign", "run"], ["indgen", "compare", "mine"]]
    out = {}
    for line in commands:
        proc = subprocess.run(line.split(), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, f"{line}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
        out[line.split()[1]] = " ".join(proc.stdout.split())
    assert "mine: goal_grasper on 'blockenv_depth' (blockenv) - breaks at k=1" in out["campaign"]
    assert out["compare"].count("blockenv_random_legal │") >= 4 and "9.54e-06" in out["compare"]


# -- in a real browser --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def served(site):
    """The built site over HTTP on 127.0.0.1 (as a docs host serves it: the search page fetches
    pages, which a browser refuses from file://)."""
    handler = functools.partial(_QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    missing: ClassVar[list[str]] = []  # what any page asked for and the server did not have

    def log_message(self, *args):
        pass

    def send_error(self, code, *args, **kwargs):
        _QuietHandler.missing.append(f"{code} {self.path}")
        super().send_error(code, *args, **kwargs)


@pytest.mark.skipif(shutil.which("chromium") is None, reason="chromium is not installed (ensure-system-deps.sh)")
def test_the_site_loads_in_a_browser_with_its_images_navigation_and_search(served):
    from helpers.browser import open_page

    _QuietHandler.missing.clear()
    index, links = open_page(f"{served}/index.html", evaluate="document.querySelectorAll('.sidebar-tree a').length")
    assert index.problems == [] and "IndGen" in index.title
    assert links >= 20  # the navigation lists every page
    quick, buttons = open_page(f"{served}/quickstart.html",
                               evaluate="document.querySelectorAll('button.copybtn').length")
    assert quick.problems == [] and "make demo" in quick.text
    assert buttons >= 3  # a copy button on every code block (sphinx-copybutton)
    assert quick.images and all(width > 0 for _, width in quick.images)
    results, _ = open_page(f"{served}/results/twin-vision.html")
    assert results.problems == [] and len(results.images) >= 6 and all(width > 0 for _, width in results.images)
    version = __import__("indgen_core").__version__
    assert f"IndGen {version}" in index.title or f"IndGen {version}" in index.text  # on every page
    nodes, _ = open_page(f"{served}/reference/nodes.html")
    assert nodes.problems == [] and "progression_manager" in nodes.text and "/indgen/task_setup" in nodes.text
    search, hits = open_page(
        f"{served}/search.html?q=campaign",
        evaluate="new Promise(done => { const t0 = Date.now(); (function poll() { "
        "const n = document.querySelectorAll('#search-results li').length; "
        "if (n || Date.now() - t0 > 10000) done(n); else setTimeout(poll, 100); })(); })",
    )
    assert search.problems == [] and hits > 3
    assert _QuietHandler.missing == []
    # the harness does see a broken page: a missing image is reported
    broken = served.replace("http://", "")
    probe, _ = open_page(f"data:text/html,<title>x</title><img src='http://{broken}/no-such.png'>")
    assert probe.problems
