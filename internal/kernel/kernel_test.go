package kernel

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/testutil"
)

// fakeMachine is a tree of kernel files in a temporary directory.
func fakeMachine(t *testing.T) Machine {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"proc/sys/vm/dirty_ratio":                    "20\n",
		"proc/sys/net/ipv4/tcp_rmem":                 "4096\t131072\t6291456\n",
		"proc/sys/kernel/core_pattern":               "core\n",
		"sys/kernel/mm/transparent_hugepage/enabled": "always [madvise] never\n",
		"sys/kernel/mm/transparent_hugepage/defrag":  "always defer defer+madvise [madvise] never\n",
		"sys/block/vda/queue/nr_requests":            "256\n",
		"sys/block/vda/queue/scheduler":              "[none] mq-deadline\n",
		"sys/block/loop3/queue/nr_requests":          "128\n",
		"proc/sys/kernel/osrelease":                  "6.1.0\n",
		"proc/meminfo":                               "MemTotal: 100 kB\nMemFree: 50 kB\nHugePages_Total:      64\nHugePages_Free:       40\nHugePages_Rsvd:        8\nHugePages_Surp:        0\nHugepagesize:       2048 kB\n",
	}
	for p, c := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if strings.HasSuffix(p, "osrelease") {
			mode = 0o444
		}
		if err := os.WriteFile(full, []byte(c), mode); err != nil {
			t.Fatal(err)
		}
	}
	return Machine{Root: root, Euid: func() int { return 0 }}
}

func TestParseKey(t *testing.T) {
	for _, c := range []struct {
		in, name string
		class    Class
		bad      string
	}{
		{in: "vm.dirty_ratio", name: "vm.dirty_ratio", class: Sysctl},
		{in: "transparent_hugepage", name: "transparent_hugepage", class: THP},
		{in: "transparent_hugepage.enabled", name: "transparent_hugepage", class: THP},
		{in: "transparent_hugepage.defrag", name: "transparent_hugepage.defrag", class: THP},
		{in: "queue.nr_requests", name: "queue.nr_requests", class: Queue},
		{in: "queue.nr_request", bad: "did you mean queue.nr_requests"},
		{in: "transparent_hugepage.khugepaged", bad: "unknown transparent huge page setting"},
		{in: "dirty_ratio", bad: "is not a kernel setting name"},
		{in: "vm/dirty_ratio", bad: "is not a kernel setting name"},
	} {
		k, err := ParseKey(c.in)
		if c.bad != "" {
			if err == nil || !strings.Contains(err.Error()+" "+errs.HintOf(err), c.bad) {
				t.Errorf("%s: %v (hint %q), want %q", c.in, err, errs.HintOf(err), c.bad)
			}
			continue
		}
		if err != nil || k.Name != c.name || k.Class != c.class {
			t.Errorf("%s: %+v %v", c.in, k, err)
		}
	}
}

func TestResolveRefusesBeforeAnythingChanges(t *testing.T) {
	m := fakeMachine(t)
	for _, c := range []struct {
		key, value, want string
	}{
		{"vm.dirty_ratio", "ten", "not an integer"},
		{"vm.no_such_key", "1", "does not exist on this machine"},
		{"net.ipv4.tcp_rmem", "4096 8192", "2 field(s), it has 3"},
		{"transparent_hugepage", "sometimes", "use one of: always, madvise, never"},
		{"kernel.osrelease", "7", "cannot be written"},
		{"queue.scheduler", "bfq", "use one of: none, mq-deadline"},
		{"queue.rotational", "1", "none of the devices under the data directory"},
	} {
		_, err := m.Resolve([]Setting{{Key: "vm.dirty_ratio", Value: "10"}, {Key: c.key, Value: c.value}}, []string{"vda", "loop3"})
		if err == nil || !strings.Contains(err.Error()+" "+errs.HintOf(err), c.want) {
			t.Errorf("%s=%s: %v (hint %q), want %q", c.key, c.value, err, errs.HintOf(err), c.want)
		}
	}
	if b, _ := os.ReadFile(m.Path(Key{Name: "vm.dirty_ratio"})); string(b) != "20\n" {
		t.Errorf("a refused set changed vm.dirty_ratio: %q", b)
	}
	ts, err := m.Resolve([]Setting{{Key: "net.ipv4.tcp_rmem", Value: "4096  87380 6291456"}, {Key: "queue.nr_requests", Value: "64"},
		{Key: "kernel.core_pattern", Value: "|/bin/false"}}, []string{"vda", "loop3"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 4 || ts[0].Value != "4096 87380 6291456" || ts[1].Dev != "vda" || ts[2].Dev != "loop3" {
		t.Errorf("resolved %+v", ts)
	}
	if err := (Machine{Root: m.Root, Euid: func() int { return 1000 }}).Supported(); err == nil || !strings.Contains(err.Error(), "needs root") {
		t.Errorf("not root: %v", err)
	}
}

func TestSessionJournalsAndRestores(t *testing.T) {
	m := fakeMachine(t)
	j := Journal{Path: filepath.Join(t.TempDir(), "kernel.json")}
	s := &Session{Journal: j, Holder: Self("test")}
	ts, err := m.Resolve([]Setting{{Key: "vm.dirty_ratio", Value: "10"}, {Key: "transparent_hugepage", Value: "never"},
		{Key: "queue.nr_requests", Value: "64"}}, []string{"vda"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(ts); err != nil {
		t.Fatal(err)
	}
	read := func(p string) string {
		v, err := Read(p)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	thp := m.Path(Key{Class: THP, Attr: "enabled"})
	if read(m.Path(Key{Name: "vm.dirty_ratio"})) != "10" || read(thp) != "never" {
		t.Errorf("not applied")
	}
	es, _ := j.Entries()
	if len(es) != 3 || es[0].Previous != "20" || es[1].Previous != "madvise" || es[2].Dev != "vda" {
		t.Errorf("journal %+v", es)
	}
	// A second value for the same key keeps the first previous value.
	ts2, _ := m.Resolve([]Setting{{Key: "vm.dirty_ratio", Value: "40"}}, nil)
	if err := s.Apply(ts2); err != nil {
		t.Fatal(err)
	}
	if c := s.Changes(); len(c) != 3 || c[0].Value != "40" || c[0].Previous != "20" {
		t.Errorf("changes %+v", c)
	}
	// Queue settings alone first (a target closing), then the rest.
	if err := s.Restore(func(c Change) bool { return c.Dev != "" }); err != nil {
		t.Fatal(err)
	}
	if read(m.QueuePath(Key{Attr: "nr_requests"}, "vda")) != "256" || read(m.Path(Key{Name: "vm.dirty_ratio"})) != "40" {
		t.Errorf("queue restore")
	}
	if err := s.Restore(nil); err != nil {
		t.Fatal(err)
	}
	if read(m.Path(Key{Name: "vm.dirty_ratio"})) != "20" || read(thp) != "madvise" {
		t.Errorf("not restored")
	}
	if _, err := os.Stat(j.Path); !os.IsNotExist(err) {
		t.Errorf("the journal is left: %v", err)
	}
}

func TestLeftoversOfADeadHolder(t *testing.T) {
	m := fakeMachine(t)
	j := Journal{Path: filepath.Join(t.TempDir(), "kernel.json")}
	dead := &Session{Journal: j, Holder: Holder{PID: testutil.DeadPID(t), What: "killed"}}
	ts, _ := m.Resolve([]Setting{{Key: "vm.dirty_ratio", Value: "5"}}, nil)
	if err := dead.Apply(ts); err != nil {
		t.Fatal(err)
	}
	// A live holder's entry is left alone, and blocks another process.
	live := &Session{Journal: j, Holder: Holder{PID: 1, Start: 0, What: "init"}}
	ts2, _ := m.Resolve([]Setting{{Key: "transparent_hugepage.defrag", Value: "never"}}, nil)
	if err := live.Apply(ts2); err != nil {
		t.Fatal(err)
	}
	me := &Session{Journal: j, Holder: Self("test")}
	if err := me.Apply(ts2); err == nil || !strings.Contains(err.Error(), "held by another tunebench process (pid 1, init)") {
		t.Errorf("a live holder's key: %v", err)
	}
	restored, err := j.RestoreLeftovers()
	if err != nil || len(restored) != 1 || restored[0].Key != "vm.dirty_ratio" {
		t.Fatalf("restored %+v, %v", restored, err)
	}
	if v, _ := Read(m.Path(Key{Name: "vm.dirty_ratio"})); v != "20" {
		t.Errorf("vm.dirty_ratio = %s after the leftovers' restore", v)
	}
	if es, _ := j.Entries(); len(es) != 1 || es[0].Holder.PID != 1 {
		t.Errorf("journal after: %+v", es)
	}
	// A new holder taking over a dead one's key keeps the machine's value.
	dead2 := &Session{Journal: j, Holder: Holder{PID: testutil.DeadPID(t)}}
	if err := dead2.Apply(ts); err != nil {
		t.Fatal(err)
	}
	ts3, _ := m.Resolve([]Setting{{Key: "vm.dirty_ratio", Value: "7"}}, nil)
	if err := me.Apply(ts3); err != nil {
		t.Fatal(err)
	}
	if c := me.Changes(); len(c) != 1 || c[0].Previous != "20" {
		t.Errorf("took over %+v", c)
	}
}

func TestHugePagesCounters(t *testing.T) {
	h, err := fakeMachine(t).ReadHugePages()
	if err != nil || h.Total != 64 || h.InUse() != 32 || h.SizeKB != 2048 {
		t.Errorf("%+v %v", h, err)
	}
}

// TestRealKernelSettingRestored changes a real sysctl of this machine
// (vm.dirty_background_ratio; the CLI tests vary vm.dirty_ratio) and
// checks it comes back, by the session and by the leftovers' restore.
func TestRealKernelSettingRestored(t *testing.T) {
	m := Local()
	if err := m.Supported(); err != nil {
		if testutil.InCI() {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	path := m.Path(Key{Name: "vm.dirty_background_ratio"})
	orig, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if v, _ := Read(path); v != orig {
			t.Errorf("vm.dirty_background_ratio left at %s, was %s (restored by the test)", v, orig)
			os.WriteFile(path, []byte(orig), 0)
		}
	})
	other := "7"
	if orig == other {
		other = "8"
	}
	j := Journal{Path: filepath.Join(t.TempDir(), "kernel.json")}
	s := &Session{Journal: j, Holder: Self("test")}
	ts, err := m.Resolve([]Setting{{Key: "vm.dirty_background_ratio", Value: other}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(ts); err != nil {
		t.Fatal(err)
	}
	if v, _ := Read(path); v != other {
		t.Fatalf("set to %s, reads %s", other, v)
	}
	if err := s.Restore(nil); err != nil {
		t.Fatal(err)
	}
	if v, _ := Read(path); v != orig {
		t.Errorf("restored to %s, was %s", v, orig)
	}
	// A killed holder's change, restored by the journal.
	dead := &Session{Journal: j, Holder: Holder{PID: testutil.DeadPID(t)}}
	if err := dead.Apply(ts); err != nil {
		t.Fatal(err)
	}
	if _, err := j.RestoreLeftovers(); err != nil {
		t.Fatal(err)
	}
	if v, _ := Read(path); v != orig {
		t.Errorf("leftover restored to %s, was %s", v, orig)
	}

	// A pair: writing vm.dirty_background_bytes makes the kernel set
	// vm.dirty_background_ratio to 0; both come back (the bytes to 0,
	// which cannot be written: the ratio's restore does it).
	bytesPath := m.Path(Key{Name: "vm.dirty_background_bytes"})
	origBytes, err := Read(bytesPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if v, _ := Read(bytesPath); v != origBytes && origBytes != "0" {
			os.WriteFile(bytesPath, []byte(origBytes), 0)
		}
	})
	ts, err = m.Resolve([]Setting{{Key: "vm.dirty_background_bytes", Value: "67108864"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(ts); err != nil {
		t.Fatal(err)
	}
	if v, _ := Read(path); v != "0" {
		t.Errorf("the kernel did not zero vm.dirty_background_ratio (%s): this test's premise", v)
	}
	if c := s.Changes(); len(c) != 1 || c[0].Key != "vm.dirty_background_bytes" {
		t.Errorf("changes %+v (the implied partner is journaled, not listed)", c)
	}
	if err := s.Restore(nil); err != nil {
		t.Fatal(err)
	}
	if v, _ := Read(path); v != orig {
		t.Errorf("vm.dirty_background_ratio %s after the pair's restore, was %s", v, orig)
	}
	if v, _ := Read(bytesPath); v != origBytes {
		t.Errorf("vm.dirty_background_bytes %s after the pair's restore, was %s", v, origBytes)
	}
	if _, err := m.Resolve([]Setting{{Key: "vm.dirty_background_bytes", Value: "67108864"}, {Key: "vm.dirty_background_ratio", Value: "5"}}, nil); err == nil ||
		!strings.Contains(err.Error(), "are one setting of the kernel") {
		t.Errorf("both keys of a pair: %v", err)
	}
}

func TestSchedulerFirst(t *testing.T) {
	m := fakeMachine(t)
	ts, err := m.Resolve([]Setting{{Key: "queue.nr_requests", Value: "64"}, {Key: "queue.scheduler", Value: "mq-deadline"}}, []string{"vda"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 2 || ts[0].Key.Attr != "scheduler" {
		t.Errorf("resolved %+v: the scheduler goes first (switching it resets nr_requests)", ts)
	}
	es := []Entry{{Key: "queue.scheduler"}, {Key: "queue.nr_requests"}, {Key: "vm.dirty_ratio"}}
	if got := restoreOrder(es); got[0] != 0 || got[1] != 2 || got[2] != 1 {
		t.Errorf("restore order %v: the scheduler first, then newest first", got)
	}
}
