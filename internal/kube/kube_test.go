package kube

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tunebench/tunebench/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func samplePlan() *Plan {
	return &Plan{Name: "sweep1", Namespace: "bench", Image: "registry.example.com/tunebench:v1", Shards: 4,
		RunArgs: []string{"run", "tpcb", "-c", "64", "-T", "10m"}, LoadArgs: []string{"load", "tpcb", "--scale", "100"},
		DSN: "host=pg.bench.svc dbname=bench user=bench", Secret: "pg-bench", SecretKey: "password",
		Claim: "bench-results", Spread: true, Rendezvous: "sweep1-20261128-160000"}
}

// TestManifestsGolden: the manifests as written (go test -update rewrites
// testdata/*.yaml after a deliberate change).
func TestManifestsGolden(t *testing.T) {
	small := samplePlan()
	small.Name, small.LoadArgs, small.Claim, small.Spread, small.Namespace = "smoke", nil, "", false, ""
	for name, p := range map[string]*Plan{"sweep1.yaml": samplePlan(), "smoke.yaml": small} {
		b, err := p.Manifests()
		if err != nil {
			t.Fatal(err)
		}
		golden := filepath.Join("testdata", name)
		if *update {
			if err := os.WriteFile(golden, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (go test ./internal/kube -update writes it)", err)
		}
		if string(b) != string(want) {
			t.Errorf("%s differs from the golden file:\n%s", name, b)
		}
	}
}

// TestManifestsValidate: the manifests pass the Kubernetes OpenAPI schema
// of every version from MinVersion to 1.37, strictly (no unknown fields),
// checked offline with PyPI's kubernetes-validate (in the test oracle's
// environment); under 1.28 they are refused (backoffLimitPerIndex did not
// exist), so the check can fail.
func TestManifestsValidate(t *testing.T) {
	dir := os.Getenv("TUNEBENCH_ORACLE")
	if dir == "" {
		dir = filepath.Join(testutil.RepoRoot(t), ".oracle")
	}
	kv := filepath.Join(dir, "bin", "kubernetes-validate")
	if _, err := os.Stat(kv); err != nil {
		msg := "no kubernetes-validate at " + kv + " (scripts/tpch-oracle.sh installs it)"
		if os.Getenv("TUNEBENCH_REQUIRE_ORACLE") == "1" {
			t.Fatal(msg + "; TUNEBENCH_REQUIRE_ORACLE=1")
		}
		t.Skip(msg)
	}
	b, err := samplePlan().Manifests()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "m.yaml")
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"1.29", "1.30", "1.31", "1.32", "1.33", "1.34", "1.35", "1.36", "1.37"} {
		out, err := exec.Command(kv, "--strict", "-k", v+".0", file).CombinedOutput()
		if err != nil || strings.Count(string(out), "passed for resource") != 3 {
			t.Errorf("Kubernetes %s: %v\n%s", v, err, out)
		}
	}
	if out, err := exec.Command(kv, "--strict", "-k", "1.27.0", file).CombinedOutput(); err == nil {
		t.Errorf("Kubernetes 1.27 took the manifests (backoffLimitPerIndex came in 1.28):\n%s", out)
	}
}

func TestPlanCheck(t *testing.T) {
	for what, change := range map[string]func(p *Plan){
		"bad --name":                       func(p *Plan) { p.Name = "Sweep_1" },
		"bad --shards":                     func(p *Plan) { p.Shards = 0 },
		"refusing a password inside --dsn": func(p *Plan) { p.DSN += " password=x" },
		"no --password-secret":             func(p *Plan) { p.Secret = "" },
		"no run arguments":                 func(p *Plan) { p.RunArgs = []string{"load", "tpcb"} },
		"bad --merge-wait":                 func(p *Plan) { p.MergeWait = "soon" },
	} {
		p := samplePlan()
		change(p)
		if _, err := p.Manifests(); err == nil || !strings.Contains(err.Error(), what) {
			t.Errorf("%s: %v", what, err)
		}
	}
}
