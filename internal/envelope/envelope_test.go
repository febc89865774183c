package envelope

import (
	"github.com/tunebench/tunebench/internal/machine"

	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/tunebench/tunebench/internal/errs"
)

func TestParseSpec(t *testing.T) {
	src := `
name: hdd-2g
memory: 2GB
cpus: 1.5
cores: 2
io:
  - device: /dev/sdb
    read_iops: 200
    write_iops: 150
    read_bps: 100MB/s
  - device: "8:32"
    write_bps: 40MiB
`
	var s Spec
	dec := yaml.NewDecoder(strings.NewReader(src))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		t.Fatal(err)
	}
	e, err := Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	want := &Envelope{Name: "hdd-2g", Memory: 2 << 30, CPUs: 1.5, Cores: 2, IO: []IOLimit{
		{Device: "/dev/sdb", ReadIOPS: 200, WriteIOPS: 150, ReadBPS: 100 << 20},
		{Device: "8:32", WriteBPS: 40 << 20},
	}}
	got, _ := json.Marshal(e)
	exp, _ := json.Marshal(want)
	if string(got) != string(exp) {
		t.Errorf("Parse:\n got %s\nwant %s", got, exp)
	}
	if b := e.Brief(); b != "hdd-2g: memory 2.0 GiB, 1.5 CPUs, 2 cores, /dev/sdb read 200 IOPS write 150 IOPS read 100.0 MiB/s, 8:32 write 40.0 MiB/s" {
		t.Errorf("Brief: %s", b)
	}
}

func TestParseZeroAndCpuset(t *testing.T) {
	e, err := Parse(Spec{})
	if err != nil || e.Name != "envelope" || !e.IsZero() {
		t.Fatalf("empty spec: %+v %v", e, err)
	}
	e, err = Parse(Spec{Name: "pin", Cpuset: "3, 0-1", Cgroup: "V1"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(e.Cpuset, []int{0, 1, 3}) || e.Cgroup != "v1" || e.IsZero() {
		t.Errorf("cpuset spec: %+v", e)
	}
}

// Every bad value gets its own problem, naming the field and the fix.
func TestParseProblems(t *testing.T) {
	_, err := Parse(Spec{
		Name:   "hdd 2g",
		Cgroup: "v3",
		Memory: "2XB",
		CPUs:   "half",
		Cores:  "2",
		Cpuset: "0-1",
		IO: []IOSpec{
			{Device: "/dev/sdb", ReadIOPS: "-5", ReadBPS: "fast"},
			{Device: "/dev/sdb", WriteIOPS: "100"},
			{Device: "/dev/sdc"},
			{ReadIOPS: "1"},
		},
	})
	if err == nil {
		t.Fatal("no error")
	}
	if errs.KindOf(err) != errs.KindUsage {
		t.Errorf("kind %v, want usage", errs.KindOf(err))
	}
	want := map[string]string{
		"name":            "letters, digits",
		"cgroup":          "auto, v1 or v2",
		"memory":          "512MiB or 2GiB",
		"cpus":            "e.g. 0.5",
		"cores":           "not both",
		"io[0].read_iops": "e.g. 200",
		"io[0].read_bps":  "100MiB",
		"io[1].device":    "one entry",
		"io[2].device":    "add read_iops",
		"io[3].device":    "name a block device",
	}
	ps := Problems(err)
	got := map[string]string{}
	for _, p := range ps {
		got[p.Field] = p.String()
	}
	for f, fix := range want {
		if !strings.Contains(got[f], fix) {
			t.Errorf("problem for %s = %q, want it to say %q", f, got[f], fix)
		}
	}
	if len(ps) != len(want) {
		t.Errorf("%d problems, want %d:\n%v", len(ps), len(want), err)
	}
	if !strings.HasPrefix(err.Error(), `envelope "hdd 2g": name "hdd 2g": not a name;`) {
		t.Errorf("message: %v", err)
	}
	var pe *ParseError
	if !errors.As(err, &pe) {
		t.Error("no ParseError in the chain")
	}
}

func TestParseLimits(t *testing.T) {
	for _, s := range []Spec{{Memory: "4MiB"}, {CPUs: "0.001"}, {Cores: "0"}, {Cpuset: "3-1"}, {Cpuset: "a"}, {IO: []IOSpec{{Device: "/x", WriteBPS: "0"}}}} {
		if _, err := Parse(s); err == nil {
			t.Errorf("%+v: no error", s)
		}
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"512MB": 512 << 20, "2GiB": 2 << 30, "2G": 2 << 30, "1.5g": 3 << 29, "4096": 4096, "64k": 64 << 10, "1T": 1 << 40, "100 MiB": 100 << 20} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "MB", "2XB", "-1G", "1iB", "1e9"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q): no error", in)
		}
	}
}

func TestCPUList(t *testing.T) {
	l, err := ParseCPUList("8-9,0-2,5,1")
	if err != nil || !slices.Equal(l, []int{0, 1, 2, 5, 8, 9}) {
		t.Fatalf("%v %v", l, err)
	}
	if s := FormatCPUList(l); s != "0-2,5,8-9" {
		t.Errorf("FormatCPUList = %s", s)
	}
	for _, bad := range []string{"", "1,", "-1", "2-1", "x", "0-99999"} {
		if _, err := ParseCPUList(bad); err == nil {
			t.Errorf("ParseCPUList(%q): no error", bad)
		}
	}
}

// This machine kind: v1 controllers on their own mounts, an empty unified
// hierarchy at /sys/fs/cgroup/unified.
const hybridMountinfo = `25 30 0:22 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw
31 25 0:27 / /sys/fs/cgroup rw shared:9 - tmpfs tmpfs rw,mode=755
32 31 0:28 / /sys/fs/cgroup/unified rw,relatime shared:10 - cgroup2 cgroup2 rw
33 31 0:29 / /sys/fs/cgroup/systemd rw,relatime shared:11 - cgroup cgroup rw,name=systemd
34 31 0:30 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
35 31 0:31 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
36 31 0:32 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset
37 31 0:33 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
38 31 0:34 / /sys/fs/cgroup/blkio rw,relatime - cgroup cgroup rw,blkio
`

const hybridSelf = "7:blkio:/\n4:memory:/job/42\n3:cpuset:/\n2:cpuacct:/\n1:cpu:/\n0::/\n"

func fakeRead(files map[string]string) func(string) ([]byte, error) {
	return func(p string) ([]byte, error) {
		if s, ok := files[p]; ok {
			return []byte(s), nil
		}
		return nil, os.ErrNotExist
	}
}

func all(string) bool { return true }

func TestChooseHybrid(t *testing.T) {
	sys := readSystem(mounts(t, hybridMountinfo), []byte(hybridSelf), fakeRead(map[string]string{"/sys/fs/cgroup/unified/cgroup.controllers": "\n"}), all)
	if sys.v2 == nil || sys.v2.mount != "/sys/fs/cgroup/unified" || len(sys.v2.controllers) != 0 {
		t.Fatalf("v2: %+v", sys.v2)
	}
	if h := sys.v1["memory"]; h == nil || h.mount != "/sys/fs/cgroup/memory" || h.self != "/job/42" {
		t.Fatalf("v1 memory: %+v", h)
	}
	e := &Envelope{Name: "e", Memory: 1 << 30, CPUs: 1, IO: []IOLimit{{Device: "/dev/vda", ReadIOPS: 1}}}
	if v, err := sys.choose(e); v != 1 || err != nil {
		t.Errorf("choose = %d, %v; want v1", v, err)
	}
	if c := sys.controllersFor(e, 1); !slices.Equal(c, []string{"memory", "cpu", "blkio", "cpuacct"}) {
		t.Errorf("controllers %v", c)
	}
	// The zero envelope goes to v1 too, for its memory accounting ...
	if v, _ := sys.choose(&Envelope{Name: "z"}); v != 1 {
		t.Errorf("zero envelope: v%d, want v1", v)
	}
	// ... unless v2 is asked for: it needs no controller.
	if v, err := sys.choose(&Envelope{Name: "z", Cgroup: "v2"}); v != 2 || err != nil {
		t.Errorf("forced v2: %d %v", v, err)
	}
	_, err := sys.choose(&Envelope{Name: "m", Cgroup: "v2", Memory: 1 << 30})
	if err == nil || !strings.Contains(err.Error(), "cgroup v2 lacks memory at /sys/fs/cgroup/unified (its cgroup.controllers lists none") {
		t.Errorf("forced v2 with memory: %v", err)
	}
}

func TestChoosePureV2(t *testing.T) {
	mi := "30 25 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate\n"
	sys := readSystem(mounts(t, mi), []byte("0::/user.slice/session-1.scope\n"),
		fakeRead(map[string]string{"/sys/fs/cgroup/cgroup.controllers": "cpuset cpu io memory pids\n"}), all)
	e := &Envelope{Name: "e", Memory: 1 << 30, Cores: 1, IO: []IOLimit{{Device: "/dev/vda", ReadIOPS: 1}}}
	if v, err := sys.choose(e); v != 2 || err != nil {
		t.Fatalf("choose = %d, %v", v, err)
	}
	if c := sys.controllersFor(e, 2); !slices.Equal(c, []string{"memory", "cpuset", "io"}) {
		t.Errorf("controllers %v", c)
	}
	if sys.v2.self != "/user.slice/session-1.scope" {
		t.Errorf("self %q", sys.v2.self)
	}
}

// Neither hierarchy can hold it: the error names what each one lacks.
func TestChooseNothing(t *testing.T) {
	mi := strings.ReplaceAll(hybridMountinfo, "38 31 0:34 / /sys/fs/cgroup/blkio rw,relatime - cgroup cgroup rw,blkio\n", "")
	mi = strings.Replace(mi, "/sys/fs/cgroup/memory rw,relatime", "/sys/fs/cgroup/memory ro,relatime", 1)
	sys := readSystem(mounts(t, mi), nil, fakeRead(nil), func(p string) bool { return p != "/sys/fs/cgroup/cpu" })
	_, err := sys.choose(&Envelope{Name: "hdd", Memory: 1 << 30, CPUs: 1, IO: []IOLimit{{Device: "/dev/vda", ReadIOPS: 1}}})
	if err == nil {
		t.Fatal("no error")
	}
	for _, s := range []string{
		`no cgroup hierarchy can hold envelope "hdd"`,
		"cgroup v2 lacks memory, cpu, io at /sys/fs/cgroup/unified (its cgroup.controllers lists none",
		"cgroup v1 lacks memory (/sys/fs/cgroup/memory is mounted read-only); cpu (/sys/fs/cgroup/cpu is not writable by this user: run as root); blkio (not mounted)",
	} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error lacks %q:\n%v", s, err)
		}
	}
	if errs.KindOf(err) != errs.KindEnvironment || !strings.Contains(errs.HintOf(err), "mount -t cgroup -o blkio") {
		t.Errorf("kind %v hint %q", errs.KindOf(err), errs.HintOf(err))
	}
	if _, err := readSystem(nil, nil, fakeRead(nil), all).choose(&Envelope{Name: "x"}); err == nil || !strings.Contains(err.Error(), "no cgroup2 filesystem is mounted") {
		t.Errorf("no cgroups at all: %v", err)
	}
}

func TestCoMountedAndEscapes(t *testing.T) {
	mi := `34 31 0:30 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct
35 31 0:31 / /mnt/my\040cgroups rw - cgroup cgroup rw,memory
`
	sys := readSystem(mounts(t, mi), []byte("2:cpuacct,cpu:/a\n"), fakeRead(nil), all)
	if sys.v1["cpu"] != sys.v1["cpuacct"] || sys.v1["cpu"].self != "/a" {
		t.Errorf("co-mounted: %+v %+v", sys.v1["cpu"], sys.v1["cpuacct"])
	}
	if sys.v1["memory"].mount != "/mnt/my cgroups" {
		t.Errorf("escaped mount %q", sys.v1["memory"].mount)
	}
}

func planOf(t *testing.T, version int, e *Envelope, cpuset []int, devs []Device) []string {
	t.Helper()
	g := &Group{env: e, version: version, cpuset: cpuset, devices: devs, swap: true}
	if version == 2 {
		g.dirs = []*groupDir{{path: "G"}}
	} else {
		for _, c := range []string{"memory", "cpu", "cpuset", "blkio"} {
			g.dirs = append(g.dirs, &groupDir{path: c, controllers: []string{c}})
		}
	}
	var out []string
	for _, w := range g.plan() {
		s := w.dir.path + "/" + w.file + "=" + w.value
		if w.optional {
			s += " (optional)"
		}
		out = append(out, s)
	}
	return out
}

func TestPlan(t *testing.T) {
	e := &Envelope{Name: "e", Memory: 64 << 20, CPUs: 0.5, Cores: 2}
	devs := []Device{{Dev: "7:3", ReadIOPS: 200, WriteBPS: 1 << 20}}
	v1 := planOf(t, 1, e, []int{0, 1}, devs)
	want1 := []string{
		"memory/memory.limit_in_bytes=67108864",
		"memory/memory.memsw.limit_in_bytes=67108864 (optional)",
		"cpu/cpu.cfs_period_us=100000",
		"cpu/cpu.cfs_quota_us=50000",
		"cpuset/cpuset.cpus=0-1",
		"cpuset/cpuset.mems=<parent>",
		"blkio/blkio.throttle.read_iops_device=7:3 200",
		"blkio/blkio.throttle.write_bps_device=7:3 1048576",
	}
	if !slices.Equal(v1, want1) {
		t.Errorf("v1 plan:\n%s", strings.Join(v1, "\n"))
	}
	v2 := planOf(t, 2, e, []int{0, 1}, devs)
	want2 := []string{
		"G/memory.max=67108864",
		"G/memory.swap.max=0 (optional)",
		"G/cpu.max=50000 100000",
		"G/cpuset.cpus=0-1",
		"G/io.max=7:3 riops=200 wbps=1048576",
	}
	if !slices.Equal(v2, want2) {
		t.Errorf("v2 plan:\n%s", strings.Join(v2, "\n"))
	}
}

// A fake sysfs: vdb (a disk) with partition vdb1, and loop3.
func fakeSysfs(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	mk := func(dir, dev string, part bool) {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(root, dir, "dev"), []byte(dev+"\n"), 0o644)
		if part {
			os.WriteFile(filepath.Join(root, dir, "partition"), []byte("1\n"), 0o644)
		}
		os.MkdirAll(filepath.Join(root, "dev", "block"), 0o755)
		if err := os.Symlink(filepath.Join(root, dir), filepath.Join(root, "dev", "block", dev)); err != nil {
			t.Fatal(err)
		}
	}
	mk("devices/virtio1/block/vdb", "253:16", false)
	mk("devices/virtio1/block/vdb/vdb1", "253:17", true)
	mk("devices/virtual/block/loop3", "7:3", false)
	return root
}

func TestResolveDevice(t *testing.T) {
	sysfs := fakeSysfs(t)
	stat := func(p string) (uint64, uint64, error) {
		switch p {
		case "/dev/vdb1":
			return 253, 17, nil
		case "/srv/data":
			return 7, 3, nil
		case "/dev/shm/x":
			return 0, 44, nil
		}
		return 0, 0, os.ErrNotExist
	}
	for given, want := range map[string]Device{
		"/dev/vdb1": {Given: "/dev/vdb1", Dev: "253:16", Disk: "vdb", Partition: "vdb1"},
		"253:16":    {Given: "253:16", Dev: "253:16", Disk: "vdb"},
		"/srv/data": {Given: "/srv/data", Dev: "7:3", Disk: "loop3"},
	} {
		got, err := resolveDevice(sysfs, given, stat)
		if err != nil || got != want {
			t.Errorf("resolve %s = %+v, %v; want %+v", given, got, err, want)
		}
	}
	for given, msg := range map[string]string{
		"/dev/shm/x": "has no block device of its own",
		"/nope":      "file does not exist",
		"9:9":        "no block device 9:9",
	} {
		if _, err := resolveDevice(sysfs, given, stat); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("resolve %s: %v, want %q", given, err, msg)
		}
	}
}

func TestOwnerOf(t *testing.T) {
	for name, want := range map[string]int{"hdd-2g-4242-1": 4242, "envelope-7-12": 7, "x": 0, "a-b": 0} {
		if got := ownerOf(name); got != want {
			t.Errorf("ownerOf(%q) = %d, want %d", name, got, want)
		}
	}
}

func TestUsageParsers(t *testing.T) {
	io := blkioUsage("7:3 Read 601\n7:3 Write 2\n7:3 Total 603\nTotal 603\n", "7:3 Read 2461696\n7:3 Write 8192\n")
	if len(io) != 1 || io[0] != (IOUsage{Dev: "7:3", ReadIOs: 601, WriteIOs: 2, ReadBytes: 2461696, WriteBytes: 8192}) {
		t.Errorf("blkio: %+v", io)
	}
	io = ioStat("7:3 rbytes=4096 wbytes=0 rios=1 wios=0 dbytes=0 dios=0\n")
	if len(io) != 1 || io[0] != (IOUsage{Dev: "7:3", ReadBytes: 4096, ReadIOs: 1}) {
		t.Errorf("io.stat: %+v", io)
	}
	if k := keyed("cache 123\nrss 4\n"); k["cache"] != 123 || k["rss"] != 4 {
		t.Errorf("keyed: %v", k)
	}
}

func TestRecordBrief(t *testing.T) {
	r := Record{Name: "hdd", Cgroup: "v1", MemoryBytes: 2 << 30, CPUs: 0.5, Cpuset: "0-1",
		IO: []Device{{Dev: "253:16", Disk: "vdb", Partition: "vdb1", ReadIOPS: 200}}}
	if s := r.Brief(); s != "hdd (cgroup v1): memory 2.0 GiB incl. page cache, 0.5 CPUs, cores 0-1, vdb (253:16) for vdb1 read 200 IOPS" {
		t.Errorf("Brief: %s", s)
	}
	if s := (Record{Name: "z", Cgroup: "v2"}).Brief(); s != "z (cgroup v2): no limits (accounting only)" {
		t.Errorf("Brief: %s", s)
	}
}

// mounts reads a mount table's text.
func mounts(t *testing.T, text string) []machine.Mount {
	t.Helper()
	ms, err := machine.ParseMounts([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return ms
}
