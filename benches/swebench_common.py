"""What the SWE-bench benchmarks share: one instance's row, environment,
test files and deciding ids from DATA (laid out as benches/
swebench_agreement.py says), and the harness's apply-and-test of one
patch, done the way its eval script does it (no docker here: the same
command and environment)."""
import json
import os
import subprocess

NON_TEST_EXTS = (".json", ".png", ".csv", ".txt", ".md", ".jpg", ".jpeg", ".pkl", ".yml", ".yaml", ".toml")


def load_jsonl(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]


class Instance:
    def __init__(self, data, instance_id):
        sw = os.path.join(data, "swebench")
        self.data = data
        self.row = next(r for r in load_jsonl(os.path.join(sw, "dataset.jsonl")) if r["instance_id"] == instance_id)
        row = self.row
        self.env = json.load(open(os.path.join(sw, "envs.json")))["%s@%s" % (row["repo"], row["version"])]
        known = {}
        kf = os.path.join(sw, "env_known_failures.json")
        if os.path.exists(kf):
            known = json.load(open(kf)).get(instance_id, [])
        self.repo = os.path.join(data, "repos", row["repo"].replace("/", "__"))
        # The harness's test files: the b/ sides, data files left out (as
        # `swebench import` does, host/src/swebench/mod.rs NON_TEST_EXTS);
        # pytest given flask-4992's tests/static/config.toml runs nothing.
        self.files = sorted(
            f
            for f in {l.split(" b/", 1)[1] for l in row["test_patch"].splitlines() if l.startswith("diff --git a/")}
            if not f.endswith(NON_TEST_EXTS)
        )
        self.cmd = self.env["cmd"].replace("<test files touched by test_patch>", " ".join("'%s'" % f for f in self.files))
        self.ids = {}
        for key in ("FAIL_TO_PASS", "PASS_TO_PASS"):
            v = row[key]
            self.ids[key] = [i for i in (json.loads(v) if isinstance(v, str) else v) if i not in known and not i.startswith("[")]

    def predictions(self):
        """Every published prediction of this instance: (system, patch)."""
        sw = os.path.join(self.data, "swebench")
        out = []
        for f in sorted(os.listdir(sw)):
            if f.startswith("preds-") and f.endswith(".jsonl"):
                for p in load_jsonl(os.path.join(sw, f)):
                    if p["instance_id"] == self.row["instance_id"] and p.get("model_patch"):
                        out.append((f[len("preds-") : -len(".jsonl")], p["model_patch"]))
        return out

    def harness(self, work, name, model_patch, test_patch_file):
        """Worktree of the base, the model patch (None: none, the base
        run), the test files reset, the test patch, the test command."""
        wt = os.path.join(work, "wt-" + name)
        subprocess.run(["git", "-C", self.repo, "worktree", "add", "-q", "--detach", wt, self.row["base_commit"]], check=True)
        if model_patch:
            subprocess.run(["git", "-C", wt, "apply", model_patch], check=False)
        subprocess.run(["git", "-C", wt, "checkout", self.row["base_commit"], "--"] + self.files, check=False, stderr=subprocess.DEVNULL)
        subprocess.run(["git", "-C", wt, "apply", test_patch_file], check=True)
        junit = os.path.join(work, "h-%s.xml" % name)
        subprocess.run(["sh", "-c", self.cmd], cwd=wt, env=dict(os.environ, AGENT_LEDGER_JUNIT=junit), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        subprocess.run(["git", "-C", self.repo, "worktree", "remove", "--force", wt], check=True)
