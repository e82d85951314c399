#!/usr/bin/env python3
"""Rebuilds the DATA directory that benches/swebench_agreement.py,
swebench_check_vs_harness.py and swebench_batch_cost.py read, from local
git mirrors of public repositories, reproducibly: the SWE-bench Lite rows,
published predictions and official results of auto-code-rover's three runs
and of CodeR (pytest-dev/pytest and pallets/flask instances only), full
clones of both repositories, one virtualenv per repository and version
(built with pyenv's Pythons and the packages SWE-bench's harness installs
for it), envs.json, and a check that every instance's gold patch passes
every FAIL_TO_PASS and PASS_TO_PASS id in its environment.

    python3 benches/swebench_data.py [--data DIR] [--skip-validate] [--keep]

The mirrors are git directories (bare repositories or .git directories),
each given by an option or an environment variable; nothing is downloaded
but the packages pip installs from PyPI:

    --lite     SWEBENCH_DATA_LITE      ivan4722/csvtransfer      (swe-bench-lite.json)
    --acr      SWEBENCH_DATA_ACR       nus-apr/auto-code-rover   (results/acr-run-N/)
    --coder    SWEBENCH_DATA_CODER     NL2Code/CodeR             (all_preds.jsonl, results.json)
    --swebench SWEBENCH_DATA_SWEBENCH  SWE-bench/SWE-bench       (swebench/harness/constants/python.py)
    --pytest   SWEBENCH_DATA_PYTEST    pytest-dev/pytest
    --flask    SWEBENCH_DATA_FLASK     pallets/flask

Each defaults to /work/.mirror/OWNER+NAME/repo (where the search tool's
`fetch` puts them). `--rev-*` options pin the commit read from each
mirror (default: the commits below, which the README records; `HEAD` reads
whatever the mirror has). DATA defaults to $SWEBENCH_DATA or /work/data;
it is removed and made anew (`--keep` keeps existing clones and venvs).
Pythons come from $PYENV_ROOT (default ~/.pyenv)/versions/X.Y.*, the
newest patch release of the version the harness names.

Layout written (as benches/swebench_agreement.py's docstring says):

    swebench/dataset.jsonl, preds-SYSTEM.jsonl, resolved-SYSTEM.json,
    swebench/envs.json, swebench/env_known_failures.json,
    repos/OWNER__NAME, envs/OWNER__NAME@VERSION, README.md,
    swebench/validation.json (the gold runs: ids failed, seconds taken)
"""
import argparse
import datetime
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

REPOS = ("pytest-dev/pytest", "pallets/flask")
SYSTEMS = {
    "acr-run1": ("acr", "results/acr-run-1"),
    "acr-run2": ("acr", "results/acr-run-2"),
    "acr-run3": ("acr", "results/acr-run-3"),
    "coder": ("coder", ""),
}
SOURCES = {
    # key: (github repo, pinned commit)
    "lite": ("ivan4722/csvtransfer", "9039a5db8b617ae6cf2c63bc08c295958c8a4968"),
    "acr": ("nus-apr/auto-code-rover", "3536ac29"),
    "coder": ("NL2Code/CodeR", "d634683"),
    "swebench": ("SWE-bench/SWE-bench", "25c52357b750af7e636daa54d03fce9861b3f3e6"),
    "pytest": ("pytest-dev/pytest", "HEAD"),
    "flask": ("pallets/flask", "HEAD"),
}
LITE_PATH = "swe-bench-lite.json"
SPECS_PATH = "swebench/harness/constants/python.py"
SPECS_INIT = "swebench/harness/constants/__init__.py"
PLACEHOLDER = "<test files touched by test_patch>"
# SWE-bench's get_test_directives drops these (harness/constants NON_TEST_EXTS).
NON_TEST_EXTS = [".json", ".png", "csv", ".txt", ".md", ".jpg", ".jpeg", ".pkl", ".yml", ".yaml", ".toml"]
JUNK_ID = re.compile(r"^\[[^\]]*(\]|$)|^\[$")


def log(*a):
    print(time.strftime("%H:%M:%S"), *a, flush=True)


def run(cmd, **kw):
    kw.setdefault("check", True)
    return subprocess.run(cmd, **kw)


def git(gitdir, *args, text=True):
    return subprocess.run(["git", "--git-dir", gitdir] + list(args), check=True, capture_output=True, text=text).stdout


def resolve(gitdir, rev):
    return git(gitdir, "rev-parse", "--verify", rev + "^{commit}").strip()


def lenient_json(text):
    """CodeR's results.json has trailing commas."""
    try:
        return json.loads(text)
    except ValueError:
        return json.loads(re.sub(r",(\s*[\]}])", r"\1", text))


def test_files(test_patch):
    files = set()
    for l in test_patch.splitlines():
        if l.startswith("diff --git a/"):
            b = l.split(" b/", 1)[1]
            if not any(b.endswith(e) for e in NON_TEST_EXTS):
                files.add(b)
    return sorted(files)


def load_specs(gitdir, rev):
    """MAP_REPO_VERSION_TO_SPECS's pytest and flask entries, and the
    requirements paths, from the harness's constants (plain data)."""
    ns = {}
    exec(compile(git(gitdir, "show", "%s:%s" % (rev, SPECS_PATH)), SPECS_PATH, "exec"), ns)
    return {"pytest-dev/pytest": ns["SPECS_PYTEST"], "pallets/flask": ns["SPECS_FLASK"]}, ns["MAP_REPO_TO_REQS_PATHS"]


def python_for(version):
    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    found = []
    for d in glob.glob(os.path.join(root, "versions", version + ".*")):
        m = re.fullmatch(re.escape(version) + r"\.(\d+)", os.path.basename(d))
        if m and os.path.exists(os.path.join(d, "bin", "python" + version)):
            found.append((int(m.group(1)), d))
    if not found:
        sys.exit("no pyenv Python %s under %s/versions" % (version, root))
    return max(found)[1]


def requirements_text(clone, commit, paths):
    """The harness's get_requirements_by_commit, read from the clone: the
    first path that exists, `-r` files expanded one level, `-e .`, comments
    and `.[test` lines left out, types-pkg_resources replaced."""
    def show(p):
        r = subprocess.run(["git", "-C", clone, "show", "%s:%s" % (commit, p)], capture_output=True, text=True)
        return r.stdout if r.returncode == 0 else None

    for path in paths:
        text = show(path)
        if text is not None:
            break
    else:
        sys.exit("no requirements file %s at %s" % (paths, commit))
    excl = lambda l: any(l.strip().startswith(x) for x in ["-e .", "#", ".[test"])
    req_dir = "/".join(path.split("/")[:-1])
    original, additional = [], []
    for line in text.split("\n"):
        if line.strip().startswith("-r"):
            extra = show(os.path.join(req_dir, line[len("-r"):].strip()))
            if extra is not None:
                additional += [l for l in extra.split("\n") if not excl(l)]
        elif not excl(line):
            original.append(line)
    additional.append("\n".join(original))
    out = "\n".join(additional)
    return re.sub(r"^types-pkg_resources([<>=!~]=?.*|$)", "types-setuptools", out, flags=re.MULTILINE)


def scm_version(clone, commit):
    """What setuptools_scm (guess-next-dev) would call `commit`."""
    d = subprocess.run(["git", "-C", clone, "describe", "--tags", "--long", "--match", "[0-9]*", commit],
                       capture_output=True, text=True, check=True).stdout.strip()
    m = re.fullmatch(r"(.+)-(\d+)-g([0-9a-f]+)", d)
    tag, dist, h = m.group(1), int(m.group(2)), m.group(3)
    if dist == 0:
        return tag
    if tag.endswith(".dev0"):  # setuptools_scm's _bump_dev
        nxt = tag[: -len(".dev0")]
    else:  # its _bump_regex
        m = re.fullmatch(r"(.*?)(\d+)(\D*)", tag)
        nxt = m.group(1) + str(int(m.group(2)) + 1)
    return "%s.dev%d+g%s" % (nxt, dist, h)


def version_file(clone, commit):
    """The file setuptools_scm writes for pytest at `commit` (write_to)."""
    for f in ("setup.py", "setup.cfg", "pyproject.toml"):
        r = subprocess.run(["git", "-C", clone, "show", "%s:%s" % (commit, f)], capture_output=True, text=True)
        m = re.search(r"""write_to["']?\s*[=:]\s*["']?([\w/.]+_version\.py)""", r.stdout)
        if m:
            return m.group(1)
    return None


def build_env(data, clone, repo, version, spec, reqs_paths, setup_commit, base_commits, pip):
    name = "%s@%s" % (repo.replace("/", "__"), version)
    venv = os.path.join(data, "envs", name)
    pyroot = python_for(spec["python"])
    if os.path.exists(os.path.join(venv, ".complete")):
        log("env %s kept" % name)
        return venv, pyroot
    shutil.rmtree(venv, ignore_errors=True)
    log("env %s: python %s" % (name, pyroot))
    run([os.path.join(pyroot, "bin", "python" + spec["python"]), "-m", "venv", venv])
    py = os.path.join(venv, "bin", "python")
    pipi = [py, "-m", "pip", "install", "--disable-pip-version-check", "--no-input", "-q"] + pip
    with tempfile.TemporaryDirectory() as tmp:
        if spec.get("packages") == "requirements.txt":
            reqs = os.path.join(tmp, "requirements.txt")
            with open(reqs, "w") as f:
                f.write(requirements_text(clone, setup_commit, reqs_paths[repo]))
            run(pipi + ["-r", reqs])
        elif spec.get("packages"):
            run(pipi + spec["packages"].split())
        if spec.get("pip_packages"):
            run(pipi + spec["pip_packages"])
        # The harness's `pip install -e .` at each instance's checkout, for
        # the dependencies it brings: done here at the base commit of every
        # instance of this version that has predictions, then at the
        # environment's setup commit, each time the project itself removed
        # again (the test command puts the tree's own src/ first on the
        # path instead).
        for i, commit in enumerate(list(base_commits) + [setup_commit]):
            wt = os.path.join(tmp, "wt%d" % i)
            run(["git", "-C", clone, "worktree", "add", "-q", "--detach", wt, commit])
            try:
                for pre in spec.get("pre_install", []):
                    run(["sh", "-c", pre], cwd=wt)
                env = dict(os.environ, SETUPTOOLS_SCM_PRETEND_VERSION=scm_version(clone, commit).split("+")[0])
                run(pipi + [wt], env=env)
            finally:
                run(["git", "-C", clone, "worktree", "remove", "--force", wt])
            run([py, "-m", "pip", "uninstall", "-y", "-q", repo.split("/")[1]])
    # Bytecode now, as pip does for what it installs: the sandbox shows the
    # venv read-only, and a module compiled at import under a project's
    # `filterwarnings = error` fails on its own invalid escapes.
    run([py, "-m", "compileall", "-q", venv], stdout=subprocess.DEVNULL)
    freeze = run([py, "-m", "pip", "freeze", "--all"], capture_output=True, text=True).stdout
    with open(os.path.join(venv, "freeze.txt"), "w") as f:
        f.write(freeze)
    open(os.path.join(venv, ".complete"), "w").close()
    return venv, pyroot


def test_cmd(repo, venv, clone, setup_commit):
    py = os.path.join(venv, "bin", "python")
    pre = ""
    if repo == "pytest-dev/pytest":
        vf = version_file(clone, setup_commit)
        if vf:
            # what setuptools_scm writes: version and version_tuple (7.0 on
            # import both, falling back to "unknown", which fails minversion)
            v = scm_version(clone, setup_commit)
            t = tuple(int(x) if x.isdigit() else x for x in re.split(r"[.+]", v))
            pre = "printf \"version = '%%s'\\nversion_tuple = %%s\\n\" '%s' \"%s\" > %s && " % (v, repr(t), vf)
    return (pre + 'PYTHONPATH="$PWD/src" %s -m pytest -rA -p no:cacheprovider --junitxml="$AGENT_LEDGER_JUNIT" %s'
            % (py, PLACEHOLDER))


def junit_outcomes(xml_path, tree):
    """node id -> passed (xfail counts as passed, as in the harness)."""
    out = {}
    if not os.path.exists(xml_path):
        return out
    for tc in ET.parse(xml_path).getroot().iter("testcase"):
        cls, name = tc.get("classname", ""), tc.get("name", "")
        parts = cls.split(".") if cls else []
        node = None
        if tc.get("file") and not parts:
            node = "%s::%s" % (tc.get("file"), name)
        for i in range(len(parts), 0, -1):
            path = "/".join(parts[:i]) + ".py"
            if os.path.exists(os.path.join(tree, path)):
                node = "::".join([path] + parts[i:] + [name])
                break
        if node is None:
            node = "::".join(parts + [name])
        kids = {c.tag for c in tc}
        ok = not (kids & {"failure", "error"})
        if "skipped" in kids:
            sk = tc.find("skipped")
            ok = ok and sk.get("type") == "pytest.xfail"
        out[node] = out.get(node, True) and ok
    return out


def outcome_of(i, outcomes):
    if i in outcomes:
        return outcomes[i]
    # The harness's log parser cuts an id at its first space: the nodes it
    # is a prefix of, all passing.
    cands = [k for k in outcomes if k.startswith(i)]
    if cands:
        return all(outcomes[k] for k in cands)
    return None


def gold_run(row, env, clone, work, name, gold):
    wt = os.path.join(work, "wt-" + name)
    run(["git", "-C", clone, "worktree", "add", "-q", "--detach", wt, row["base_commit"]])
    try:
        for patch, what in ((row["patch"], "gold"), (row["test_patch"], "test")):
            if what == "gold" and not gold:
                continue
            p = os.path.join(work, "%s-%s.diff" % (name, what))
            with open(p, "w") as f:
                f.write(patch)
            run(["git", "-C", wt, "apply", p])
        junit = os.path.join(work, "%s.xml" % name)
        cmd = env["cmd"].replace(PLACEHOLDER, " ".join("'%s'" % f for f in test_files(row["test_patch"])))
        start = time.monotonic()
        r = subprocess.run(["sh", "-c", cmd], cwd=wt, capture_output=True, text=True,
                           env={"PATH": "/usr/bin:/bin", "LANG": os.environ.get("LANG", "C.UTF-8"),
                                "HOME": work, "AGENT_LEDGER_JUNIT": junit})
        elapsed = time.monotonic() - start
        with open(os.path.join(work, "%s.log" % name), "w") as f:
            f.write(r.stdout + r.stderr)
        return junit_outcomes(junit, wt), elapsed, r.returncode
    finally:
        run(["git", "-C", clone, "worktree", "remove", "--force", wt])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=os.environ.get("SWEBENCH_DATA", "/work/data"))
    for key, (gh, rev) in SOURCES.items():
        ap.add_argument("--" + key, default=os.environ.get("SWEBENCH_DATA_" + key.upper(),
                                                           "/work/.mirror/%s/repo" % gh.replace("/", "+")))
        ap.add_argument("--rev-" + key, default=rev)
    ap.add_argument("--keep", action="store_true", help="keep existing clones and venvs")
    ap.add_argument("--skip-validate", action="store_true")
    ap.add_argument("--pip-arg", action="append", default=[], help="extra argument for every pip install")
    a = ap.parse_args()
    data = os.path.abspath(a.data)
    sw = os.path.join(data, "swebench")
    src = {}
    for key, (gh, _) in SOURCES.items():
        gd = getattr(a, key)
        if not os.path.isdir(gd):
            sys.exit("no git directory for %s (%s) at %s" % (key, gh, gd))
        src[key] = (gh, gd, resolve(gd, getattr(a, "rev_" + key.replace("-", "_"))))
    if not a.keep:
        shutil.rmtree(data, ignore_errors=True)
    shutil.rmtree(sw, ignore_errors=True)
    os.makedirs(sw)
    readme = []

    # 1. The dataset, as published.
    gh, gd, rev = src["lite"]
    rows = json.loads(git(gd, "show", "%s:%s" % (rev, LITE_PATH)))
    assert len(rows) == 300 and len({r["instance_id"] for r in rows}) == 300, len(rows)
    with open(os.path.join(sw, "dataset.jsonl"), "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    by_id = {r["instance_id"]: r for r in rows}
    readme.append("- `swebench/dataset.jsonl`: the 300 SWE-bench Lite test rows, as stored in "
                  "github.com/%s at %s, path `%s` (a JSON list; written one row a line, fields unchanged)."
                  % (gh, rev, LITE_PATH))

    # 2. Predictions and official results.
    counts = {}
    for system, (key, base) in SYSTEMS.items():
        gh, gd, rev = src[key]
        if key == "acr":
            ppath, rpath = base + "/predictions_for_swebench.json", base + "/new_eval_results/report.json"
            preds = json.loads(git(gd, "show", "%s:%s" % (rev, ppath)))
        else:
            ppath, rpath = "all_preds.jsonl", "results.json"
            preds = [json.loads(l) for l in git(gd, "show", "%s:%s" % (rev, ppath)).splitlines() if l.strip()]
        report = lenient_json(git(gd, "show", "%s:%s" % (rev, rpath)))
        kept = [{"instance_id": p["instance_id"], "model_name_or_path": p["model_name_or_path"],
                 "model_patch": p["model_patch"]}
                for p in preds
                if p["instance_id"] in by_id and by_id[p["instance_id"]]["repo"] in REPOS and p.get("model_patch")]
        empty = [p["instance_id"] for p in preds if p["instance_id"] in by_id
                 and by_id[p["instance_id"]]["repo"] in REPOS and not p.get("model_patch")]
        with open(os.path.join(sw, "preds-%s.jsonl" % system), "w") as f:
            for p in kept:
                f.write(json.dumps(p) + "\n")
        res = {"resolved": sorted(report["resolved"]), "evaluated": sorted(report["with_logs"])}
        with open(os.path.join(sw, "resolved-%s.json" % system), "w") as f:
            json.dump(res, f, indent=1)
        ids = {p["instance_id"] for p in kept}
        counts[system] = (len(kept), len(ids & set(res["resolved"])), empty)
        readme.append("- `swebench/preds-%s.jsonl`: github.com/%s at %s, `%s`, the %d predictions of "
                      "pytest-dev/pytest and pallets/flask instances with a non-empty model_patch%s "
                      "(fields instance_id, model_name_or_path, model_patch)."
                      % (system, gh, rev, ppath, len(kept),
                         "; left out for an empty patch: %s" % ", ".join(empty) if empty else ""))
        readme.append("- `swebench/resolved-%s.json`: github.com/%s at %s, `%s`: its `resolved` list and "
                      "its `with_logs` list as `evaluated` (every instance the official run evaluated, "
                      "all repositories; %d resolved of %d)."
                      % (system, gh, rev, rpath, len(res["resolved"]), len(res["evaluated"])))
    wanted = sorted({json.loads(l)["instance_id"] for s in SYSTEMS
                     for l in open(os.path.join(sw, "preds-%s.jsonl" % s))})

    # 3. Clones.
    clones = {}
    for key, repo in (("pytest", "pytest-dev/pytest"), ("flask", "pallets/flask")):
        gh, gd, rev = src[key]
        dest = os.path.join(data, "repos", repo.replace("/", "__"))
        if not os.path.isdir(os.path.join(dest, ".git")):
            shutil.rmtree(dest, ignore_errors=True)
            log("clone %s" % repo)
            run(["git", "clone", "-q", "--no-local", gd, dest])
            run(["git", "-C", dest, "checkout", "-q", "--detach", rev])
        need = {c for r in rows if r["repo"] == repo for c in (r["base_commit"], r["environment_setup_commit"])}
        missing = [c for c in sorted(need)
                   if subprocess.run(["git", "-C", dest, "cat-file", "-e", c + "^{commit}"]).returncode]
        if missing:
            sys.exit("%s lacks %s" % (repo, missing))
        clones[repo] = dest
        readme.append("- `repos/%s`: `git clone` of github.com/%s (mirror at %s, all its branches and tags), "
                      "work tree at %s; holds all %d base and environment setup commits of its Lite rows."
                      % (repo.replace("/", "__"), gh, gd, rev, len(need)))

    # 4. Environments.
    gh, gd, rev = src["swebench"]
    specs, reqs_paths = load_specs(gd, rev)
    envs, versions = {}, {}
    bases = {}
    for iid in wanted:
        r = by_id[iid]
        versions.setdefault((r["repo"], r["version"]), r["environment_setup_commit"])
        bases.setdefault((r["repo"], r["version"]), []).append(r["base_commit"])
    env_notes = []
    for (repo, version), setup_commit in sorted(versions.items()):
        spec = specs[repo][version]
        venv, pyroot = build_env(data, clones[repo], repo, version, spec, reqs_paths, setup_commit,
                                 bases[(repo, version)], a.pip_arg)
        key = "%s@%s" % (repo, version)
        envs[key] = {"cmd": test_cmd(repo, venv, clones[repo], setup_commit),
                     "sandbox_read_paths": [venv, pyroot]}
        env_notes.append("  - `%s`: Python %s (%s); spec %s; environment_setup_commit %s; pip freeze in "
                         "`envs/%s@%s/freeze.txt`"
                         % (key, os.path.basename(pyroot), pyroot, json.dumps(spec), setup_commit,
                            repo.replace("/", "__"), version))
    with open(os.path.join(sw, "envs.json"), "w") as f:
        json.dump(envs, f, indent=1, sort_keys=True)
    readme.append("- `envs/OWNER__NAME@VERSION` and `swebench/envs.json`: one venv per repository and version "
                  "of the instances with predictions, built by `benches/swebench_data.py` from pyenv's Python "
                  "and the harness's MAP_REPO_VERSION_TO_SPECS in github.com/%s at %s, `%s`: `packages` "
                  "(flask: `requirements/dev.txt` at the environment_setup_commit, read from the clone, "
                  "as the harness's get_requirements does), `pip_packages`, `pre_install`, then the "
                  "harness's `pip install -e .` done as `pip install` of the environment_setup_commit for "
                  "its dependencies and the project uninstalled again (the test command runs the tree's own "
                  "`src/` through PYTHONPATH; for pytest it first writes `src/_pytest/_version.py`, "
                  "which setuptools_scm would, with the setup commit's version):\n%s"
                  % (gh, rev, SPECS_PATH, "\n".join(env_notes)))

    # 5. Validation: the gold patch passes every required id.
    known, report = {}, {}
    if not a.skip_validate:
        work = tempfile.mkdtemp(prefix="swebench-data-")
        for iid in wanted:
            r = by_id[iid]
            env = envs["%s@%s" % (r["repo"], r["version"])]
            outcomes, elapsed, rc = gold_run(r, env, clones[r["repo"]], work, iid, True)
            failed = []
            for k in ("FAIL_TO_PASS", "PASS_TO_PASS"):
                for i in json.loads(r[k]):
                    if JUNK_ID.match(i):
                        continue
                    if outcome_of(i, outcomes) is not True:
                        failed.append((k, i, outcome_of(i, outcomes)))
            base_failed = []
            if failed:
                base, _, _ = gold_run(r, env, clones[r["repo"]], work, iid + "-base", False)
                for k, i, _ in failed:
                    if k == "PASS_TO_PASS" and outcome_of(i, base) is not True:
                        base_failed.append(i)
                if base_failed:
                    known[iid] = sorted(base_failed)
            report[iid] = {"seconds": round(elapsed, 2), "exit": rc, "tests": len(outcomes),
                           "failed": [[k, i, o] for k, i, o in failed], "failed_at_base_too": base_failed}
            log("gold %s: %d tests, %.1fs, %d required ids not passing%s"
                % (iid, len(outcomes), elapsed, len(failed), " (%s)" % failed[:3] if failed else ""))
        with open(os.path.join(sw, "validation.json"), "w") as f:
            json.dump(report, f, indent=1, sort_keys=True)
        log("validation logs and reports in %s" % work)
    with open(os.path.join(sw, "env_known_failures.json"), "w") as f:
        json.dump(known, f, indent=1, sort_keys=True)
    readme.append("- `swebench/env_known_failures.json`: PASS_TO_PASS ids that fail with the gold patch "
                  "and at the base in these environments (found by the validation below): %s."
                  % (json.dumps(known) if known else "none"))
    readme.append("- `swebench/validation.json`: each instance with predictions run at its base commit "
                  "with the gold patch and test_patch applied, by its env's command (junit parsed to node "
                  "ids): seconds, tests reported, required ids not passing.")

    with open(os.path.join(data, "README.md"), "w") as f:
        f.write("# SWE-bench data for agent-ledger's benches\n\n"
                "Built %s by `benches/swebench_data.py` (agent-ledger), from local git mirrors of public "
                "GitHub repositories; nothing else downloaded but pip's packages from PyPI. Consumed by "
                "`benches/swebench_agreement.py` (layout in its docstring).\n\n"
                "Predictions and resolved counts (pytest and flask instances): %s\n\n## Sources\n\n%s\n"
                % (datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                   "; ".join("%s %d predictions, %d officially resolved" % (s, n, k) for s, (n, k, _) in counts.items()),
                   "\n".join(readme)))
    for s, (n, k, empty) in counts.items():
        log("%s: %d predictions, %d resolved%s" % (s, n, k, " (empty patch dropped: %s)" % empty if empty else ""))
    fails = {i: len(v["failed"]) for i, v in report.items() if v["failed"]}
    if fails:
        log("gold runs with required ids not passing (see swebench/validation.json): %s" % json.dumps(fails))
    log("done: %s" % data)


if __name__ == "__main__":
    main()
