package cli_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/envelope"
	"github.com/tunebench/tunebench/internal/testutil"
)

// TestExperimentEnvelope: matrix.envelope starts the managed server inside
// a cgroup per envelope. With a 128 MiB memory limit (page cache included)
// and a table larger than that, the group's memory stays under the limit
// while the run reads it; the envelope is recorded with the run, and no
// cgroup is left afterwards (issue 14).
func TestExperimentEnvelope(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("cgroups need root")
	}
	version, work := envelopeWork(t, "128MiB", "tunebench-envelope-test-")
	h := newHarness(t)
	results := tempPath(t, "results.db")
	path := writeExperiment(t, fmt.Sprintf(`name: envelopes
target:
  managed: {dir: %s}
  settings: {shared_buffers: 32MB, maintenance_work_mem: 16MB}
workload:
  name: tpcb
  options: {scale: 12, duration: 3s, script: select-only, clients: 2}
envelopes:
  tiny: {memory: 128MiB, cpus: 1}
matrix:
  envelope: [tiny]
`, filepath.Join(work, "srv")))

	// Watch the group's memory while the experiment runs.
	usageFiles := func() []string {
		var out []string
		if version == "v1" {
			out, _ = filepath.Glob("/sys/fs/cgroup/memory/tunebench/tiny-*/memory.usage_in_bytes")
		} else {
			out, _ = filepath.Glob("/sys/fs/cgroup/tunebench/tiny-*/memory.current")
		}
		return out
	}
	// The limit was reached (the kernel then reclaims: failcnt counts it),
	// which shows the server's pages are charged to the group.
	hitFiles := func() []string {
		var out []string
		if version == "v1" {
			out, _ = filepath.Glob("/sys/fs/cgroup/memory/tunebench/tiny-*/memory.failcnt")
		} else {
			out, _ = filepath.Glob("/sys/fs/cgroup/tunebench/tiny-*/memory.events")
		}
		return out
	}
	var mu sync.Mutex
	var peak, hits int64
	var samples int
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			for _, f := range hitFiles() {
				if b, err := os.ReadFile(f); err == nil {
					v := strings.TrimSpace(string(b))
					for _, line := range strings.Split(v, "\n") { // v2: "max N" in memory.events
						if f := strings.Fields(line); len(f) == 2 && f[0] == "max" {
							v = f[1]
						}
					}
					if n, err := strconv.ParseInt(v, 10, 64); err == nil {
						mu.Lock()
						hits = max(hits, n)
						mu.Unlock()
					}
				}
			}
			for _, f := range usageFiles() {
				if b, err := os.ReadFile(f); err == nil {
					if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
						mu.Lock()
						peak, samples = max(peak, n), samples+1
						mu.Unlock()
					}
				}
			}
		}
	}()
	r := h.run("experiment", "run", path, "--results", results)
	close(stop)
	<-done
	if r.code != 0 {
		t.Fatalf("want exit 0:\n%s", r)
	}
	if !strings.Contains(r.stderr, "start a managed server in envelope tiny") || !strings.Contains(r.stderr, "envelope tiny (cgroup "+version+"): memory 128.0 MiB incl. page cache, 1 CPUs") {
		t.Errorf("the envelope is not said:\n%s", r.stderr)
	}
	if samples < 10 || peak == 0 {
		t.Fatalf("the group's memory was sampled %d times (peak %d): was the server in it?", samples, peak)
	}
	if hits == 0 {
		t.Errorf("the group never reached its limit (peak %d bytes): the server's pages were not charged to it", peak)
	}
	if peak > 128<<20+(1<<20) {
		t.Errorf("the group's memory peaked at %d bytes, over its 128 MiB limit", peak)
	}
	t.Logf("memory peak %.1f MiB of 128 MiB over %d samples", float64(peak)/(1<<20), samples)
	show := h.must(0, "results", "show", "1", "--results", results)
	if !strings.Contains(show.stdout, "envelope: tiny (cgroup "+version+"): memory 128.0 MiB incl. page cache") ||
		!strings.Contains(show.stdout, "; during the run: ") || !strings.Contains(show.stdout, "memory limit hits") {
		t.Errorf("results show does not name the envelope:\n%s", show.stdout)
	}
	if left := usageFiles(); len(left) > 0 {
		t.Errorf("cgroups left: %v", left)
	}
}

// envelopeWork skips unless an envelope with a memory limit can be made
// here, and returns the cgroup version and a work directory the server's
// user can enter; cleanup removes it and sweeps what a failed run left.
func envelopeWork(t *testing.T, memory, prefix string) (version, work string) {
	t.Helper()
	e, err := envelope.Parse(envelope.Spec{Name: "probe", Memory: memory})
	if err != nil {
		t.Fatal(err)
	}
	if version, err = envelope.Probe(e); err != nil {
		t.Skipf("no writable cgroup hierarchy here: %v", err)
	}
	work, remove, err := testutil.TempDir(prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(remove)
	t.Cleanup(func() { envelope.Sweep() })
	return version, work
}

// TestExperimentEnvelopeFsblog: a workload that runs in tunebench itself
// (fsblog) is enveloped by tunebench joining the group for the run, and
// leaving it after. Not parallel: while tunebench (this test process) is
// in the group, its other tests' memory would count too.
func TestExperimentEnvelopeFsblog(t *testing.T) {
	needLoopDevices(t, "mkfs.ext4", "mkfs.xfs")
	version, work := envelopeWork(t, "512MiB", "tunebench-envelope-fsblog-")
	h := newHarness(t)
	results := tempPath(t, "results.db")
	path := writeExperiment(t, fmt.Sprintf(`name: fsblog-envelope
target:
  managed: {dir: %s}
workload:
  name: fsblog
  options: {iterations: 2, interval: 1s, writers: 1, rewriters: 1, commenters: 1, readers: 2}
layouts:
  e4: {loop: 1GiB, filesystem: ext4, mount: [noatime]}
  x: {loop: 1GiB, filesystem: xfs}
envelopes:
  blog: {memory: 512MiB}
matrix:
  storage: [e4, x]
  envelope: [blog]
order: sequential
`, work))
	procs := "/sys/fs/cgroup/memory/tunebench/blog-*/cgroup.procs"
	if version == "v2" {
		procs = "/sys/fs/cgroup/tunebench/blog-*/cgroup.procs"
	}
	me := strconv.Itoa(os.Getpid())
	inside := make(chan bool, 1)
	stop := make(chan struct{})
	go func() {
		seen := false
		defer func() { inside <- seen }()
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			files, _ := filepath.Glob(procs)
			for _, f := range files {
				if b, err := os.ReadFile(f); err == nil && strings.Contains("\n"+string(b), "\n"+me+"\n") {
					seen = true
				}
			}
		}
	}()
	r := h.run("experiment", "run", path, "--results", results)
	close(stop)
	if r.code != 0 {
		t.Fatalf("want exit 0:\n%s", r)
	}
	if !<-inside {
		t.Errorf("tunebench (pid %s) was never in the envelope during the fsblog run", me)
	}
	if b, _ := os.ReadFile("/proc/self/cgroup"); strings.Contains(string(b), "tunebench/blog") {
		t.Errorf("tunebench is still in the envelope after the run:\n%s", b)
	}
	// The blogs were written on each layout's filesystem, recorded.
	_, links := expLinks(t, results, "fsblog-envelope")
	if len(links) != 2 {
		t.Fatalf("links %+v", links)
	}
	for i, l := range []struct{ name, fs string }{{"e4", "ext4"}, {"x", "xfs"}} {
		x := h.must(0, "results", "export", fmt.Sprint(links[i].RunID), "--format", "json", "--results", results)
		if !strings.Contains(x.stdout, l.name+".mnt/server/fsblog") || !strings.Contains(strings.ReplaceAll(x.stdout, " ", ""), `"fs_type":"`+l.fs+`"`) || !strings.Contains(x.stdout, `"layout"`) {
			t.Errorf("the fsblog run is not recorded on layout %s:\n%s", l.name, x.stdout)
		}
	}
	if l := leftovers(t, work); l != "" {
		t.Errorf("left behind:\n%s", l)
	}
}
