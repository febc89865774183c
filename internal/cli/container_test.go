//go:build linux

package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/kube"
	"github.com/tunebench/tunebench/internal/testutil"
)

// podmanRun are the options podman 4.3 needs on these machines to start a
// container (runc; crun fails on hybrid cgroups; rlimits it may set).
// podmanRun runs a container as the manifests' pods run: a read-only root
// (podman mounts a tmpfs on /tmp, as the pods' emptyDir), the image's
// user 65532.
var podmanRun = []string{"--runtime", "runc", "run", "--rm", "--network", "host", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024", "--read-only"}

// TestShardContainers: the image deploy/Containerfile makes (FROM scratch,
// the static binary) runs three shards of a tpcb run as an Indexed Job's
// pods would (JOB_COMPLETION_INDEX set, --shard 3, a rendezvous key, the
// password from the environment, the results on a volume), on the host
// network against a managed server; each stores its part on its own
// volume, and together they committed what the history grew by.
func TestShardContainers(t *testing.T) {
	podman, err := exec.LookPath("podman")
	if err != nil {
		if testutil.InCI() {
			t.Fatalf("podman is required in CI (CI=%s): apt-get install podman runc", os.Getenv("CI"))
		}
		t.Skip("podman not installed (apt-get install podman runc)")
	}
	t.Parallel()
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	ctxDir := t.TempDir()
	rootfs := filepath.Join(ctxDir, "rootfs")
	for _, d := range []string{"tmp", "results"} {
		if err := os.MkdirAll(filepath.Join(rootfs, d), 0o777); err != nil {
			t.Fatal(err)
		}
	}
	if ca, err := os.ReadFile("/etc/ssl/certs/ca-certificates.crt"); err == nil { // as make image does
		if err := os.MkdirAll(filepath.Join(rootfs, "etc", "ssl", "certs"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(rootfs, "etc", "ssl", "certs", "ca-certificates.crt"), ca, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_ = os.Chmod(filepath.Join(rootfs, "tmp"), 0o1777)
	_ = os.Chmod(filepath.Join(rootfs, "results"), 0o777)
	build := exec.Command("go", "build", "-o", filepath.Join(rootfs, "tunebench"), "github.com/tunebench/tunebench/cmd/tunebench")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	image := fmt.Sprintf("localhost/tunebench-test:%d-%d", os.Getpid(), time.Now().UnixNano())
	if out, err := exec.Command(podman, "build", "-f", filepath.Join(repo, "deploy", "Containerfile"), "-t", image, ctxDir).CombinedOutput(); err != nil {
		t.Fatalf("podman build: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command(podman, "rmi", "-f", image).Run() })
	if out, err := exec.Command(podman, append(podmanRun, image, "version")...).CombinedOutput(); err != nil {
		if testutil.InCI() {
			t.Fatalf("podman cannot run a container here: %v\n%s", err, out)
		}
		t.Skipf("podman cannot run a container here: %v\n%s", err, out)
	}

	srv := pg.Server(t)
	db := testutil.CreateDB(t, srv)
	dsn := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", srv.Port(), db)
	// The load Job's container: the data loaded once, before the shards.
	load := append(append([]string{}, podmanRun...), "-e", "PGPASSWORD="+srv.Password(), image, "load", "tpcb", "--dsn", dsn, "--scale", "1")
	if out, err := exec.Command(podman, load...).CombinedOutput(); err != nil || !bytes.Contains(out, []byte("done in")) {
		t.Fatalf("load container: %v\n%s", err, out)
	}
	conn := connectDB(t, srv, db)
	history := func() int64 { return historyRows(t, conn) }
	before := history()
	const shards = 3
	// One directory a shard on a "claim", as the Indexed Job's
	// subPathExpr makes them; the merge container, started with the
	// shards as the merge Job is, reads them all.
	claim := t.TempDir()
	if err := os.Chmod(claim, 0o777); err != nil {
		t.Fatal(err)
	}
	vols := make([]string, shards)
	outs := make([][]byte, shards+1)
	errs := make([]error, shards+1)
	var wg sync.WaitGroup
	plan := kube.Plan{Rendezvous: "containers", MergeWait: "2m"}
	mergeArgs := append(append([]string{}, podmanRun...), "-v", claim+":/results", image)
	wg.Add(1)
	go func() {
		defer wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		outs[shards], errs[shards] = exec.CommandContext(ctx, podman, append(mergeArgs, plan.MergeArgs()...)...).CombinedOutput()
	}()
	for i := range shards {
		vols[i] = filepath.Join(claim, fmt.Sprintf("shard-%d", i))
		if err := os.Mkdir(vols[i], 0o777); err != nil {
			t.Fatal(err)
		}
		_ = os.Chmod(vols[i], 0o777)
		args := append(append([]string{}, podmanRun...), "-e", "JOB_COMPLETION_INDEX="+strconv.Itoa(i), "-e", "PGPASSWORD="+srv.Password(),
			"-v", vols[i]+":/results", image,
			// 4 s: the merge wants each shard's window 99% inside the
			// common one, and a container that starts 27 ms late on a
			// loaded machine was already 1.3% of a 2 s window.
			"run", "tpcb", "--dsn", dsn, "-c", "3", "-T", "4s", "--warmup", "0s", "--shard", strconv.Itoa(shards),
			"--rendezvous", "containers", "--json", "/results/run.json", "-P", "0")
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			outs[i], errs[i] = exec.CommandContext(ctx, podman, args...).CombinedOutput()
		}()
	}
	wg.Wait()
	var committed int64
	for i := range shards {
		if errs[i] != nil {
			t.Fatalf("shard %d container: %v\n%s", i, errs[i], outs[i])
		}
		if !bytes.Contains(outs[i], []byte(fmt.Sprintf("shard %d/%d: clients %d-%d of 3", i, shards, i, i))) {
			t.Errorf("shard %d does not say its part:\n%s", i, outs[i])
		}
		b, err := os.ReadFile(filepath.Join(vols[i], "run.json"))
		var sum struct {
			Transactions int64               `json:"transactions"`
			Shard        struct{ Index int } `json:"shard"`
		}
		if err != nil || json.Unmarshal(b, &sum) != nil || sum.Shard.Index != i {
			t.Fatalf("shard %d summary: %v\n%s", i, err, b)
		}
		if _, err := os.Stat(filepath.Join(vols[i], "results.db")); err != nil {
			t.Errorf("shard %d stored no results on its volume: %v", i, err)
		}
		committed += sum.Transactions
	}
	if grew := history() - before; committed == 0 || grew < committed || grew > committed+3 {
		t.Errorf("the containers committed %d transactions; the history grew by %d", committed, grew)
	}
	// The merge container waited for the three and merged them.
	if errs[shards] != nil || !bytes.Contains(outs[shards], []byte("history cross-check: history grew by")) {
		t.Fatalf("merge container: %v\n%s", errs[shards], outs[shards])
	}
	b, err := os.ReadFile(filepath.Join(claim, "merged", "run.json"))
	var merged struct {
		Status       string `json:"status"`
		Transactions int64  `json:"transactions"`
	}
	if err != nil || json.Unmarshal(b, &merged) != nil || merged.Status != "ok" || merged.Transactions != committed {
		t.Errorf("merged run (the shards committed %d): %v\n%s", committed, err, b)
	}
}
