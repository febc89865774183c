package fio

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func baseOpts() JobOptions {
	return JobOptions{Target: "/data/x", TotalSize: 4 << 30, BlockSize: 8192, Jobs: 4, IODepth: 1, Runtime: 60 * time.Second, IOEngine: "libaio"}
}

func TestJobFileSeqRead(t *testing.T) {
	got, err := JobFile(StandardTests()[0], baseOpts())
	if err != nil {
		t.Fatal(err)
	}
	want := `; tunebench storage test seq-read: sequential read, 8k blocks, 4 job(s) x 1G, 1m0s, ioengine libaio
[global]
ioengine=libaio
iodepth=1
direct=0
bs=8192
size=1073741824
numjobs=4
runtime=60
time_based=1
group_reporting=1
invalidate=1
directory=/data/x
filename_format=tunebench-fio.$jobnum

[seq-read]
rw=read
`
	if got != want {
		t.Errorf("job file:\n%s\nwant:\n%s", got, want)
	}
}

func TestJobFileEveryTest(t *testing.T) {
	o := baseOpts()
	o.Direct = true
	o.IOEngine = "psync"
	o.Target = "/mnt/a:b"
	want := map[string][]string{
		"seq-read":   {"rw=read"},
		"seq-write":  {"rw=write"},
		"rand-read":  {"rw=randread"},
		"rand-write": {"rw=randwrite"},
		"rw-mix":     {"rw=randrw", "rwmixread=50"},
	}
	for _, tst := range StandardTests() {
		jf, err := JobFile(tst, o)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range append(want[tst.Name], "direct=1", "ioengine=psync", `directory=/mnt/a\:b`, "["+tst.Name+"]", "group_reporting=1") {
			if !strings.Contains(jf, s+"\n") {
				t.Errorf("%s: no %q in\n%s", tst.Name, s, jf)
			}
		}
		if tst.Name != "rw-mix" && strings.Contains(jf, "rwmixread") {
			t.Errorf("%s has rwmixread", tst.Name)
		}
		if got := JobNames(jf); !reflect.DeepEqual(got, []string{tst.Name}) {
			t.Errorf("JobNames = %v", got)
		}
		if got := JobFileTargets(jf); !reflect.DeepEqual(got, []string{"/mnt/a:b"}) {
			t.Errorf("JobFileTargets = %v", got)
		}
	}
}

func TestJobFileDevice(t *testing.T) {
	o := baseOpts()
	o.Target, o.Device = "/dev/sdz", true
	jf, err := JobFile(StandardTests()[3], o)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"filename=/dev/sdz\n", "offset_increment=1073741824\n", "rw=randwrite\n"} {
		if !strings.Contains(jf, s) {
			t.Errorf("no %q in\n%s", s, jf)
		}
	}
	if strings.Contains(jf, "directory=") || strings.Contains(jf, "filename_format") {
		t.Errorf("device job file names a directory:\n%s", jf)
	}
}

func TestJobOptionsValidate(t *testing.T) {
	bad := []func(*JobOptions){
		func(o *JobOptions) { o.Target = "" },
		func(o *JobOptions) { o.Target = "/a/$HOME" },
		func(o *JobOptions) { o.Target = "/a\nb" },
		func(o *JobOptions) { o.BlockSize = 100 },
		func(o *JobOptions) { o.Jobs = 0 },
		func(o *JobOptions) { o.IODepth = 0 },
		func(o *JobOptions) { o.Runtime = 500 * time.Millisecond },
		func(o *JobOptions) { o.Runtime = 1500 * time.Millisecond },
		func(o *JobOptions) { o.IOEngine = "lib aio" },
		func(o *JobOptions) { o.TotalSize = 8192 * 3 },
	}
	for i, f := range bad {
		o := baseOpts()
		f(&o)
		if err := o.Validate(); err == nil {
			t.Errorf("case %d: want an error for %+v", i, o)
		}
	}
	o := baseOpts()
	o.TotalSize = 100 << 20
	o.Jobs = 3
	if got := o.PerJobSize(); got%8192 != 0 || got > (100<<20)/3 || got < (100<<20)/3-8192 {
		t.Errorf("PerJobSize = %d", got)
	}
}

func TestParseTests(t *testing.T) {
	all, err := ParseTests(nil)
	if err != nil || len(all) != 5 {
		t.Fatalf("all: %v %v", all, err)
	}
	got, err := ParseTests([]string{"rw-mix", " seq-read"})
	if err != nil || len(got) != 2 || got[0].Name != "rw-mix" || got[1].Name != "seq-read" {
		t.Errorf("got %v %v", got, err)
	}
	for _, in := range [][]string{{"seq-reed"}, {"seq-read", "seq-read"}, {""}} {
		if _, err := ParseTests(in); err == nil {
			t.Errorf("ParseTests(%q): want an error", in)
		}
	}
	if !all[1].Writes() || all[0].Writes() || !all[4].Writes() || all[2].Writes() {
		t.Errorf("Writes() wrong")
	}
}

func TestSizes(t *testing.T) {
	for in, want := range map[string]int64{
		"8k": 8192, "8K": 8192, "8KiB": 8192, "64M": 64 << 20, "4G": 4 << 30, "4g": 4 << 30, "1t": 1 << 40,
		"512": 512, "1.5G": 3 << 29, "16MB": 16 << 20,
	} {
		got, err := ParseSize(in)
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "k", "-1G", "0", "4X", "G4"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q): want an error", in)
		}
	}
	for n, want := range map[int64]string{8192: "8k", 4 << 30: "4G", 64 << 20: "64M", 1000: "1000", 3 << 29: "1536M"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestJobFileTargetsUser(t *testing.T) {
	jf := `; comment filename=/dev/sda
[global]
directory=/a:/b\:c
[job1]
filename = /dev/nvme0n1
[job2]
size=1G
`
	if got := JobFileTargets(jf); !reflect.DeepEqual(got, []string{"/a", "/b:c", "/dev/nvme0n1"}) {
		t.Errorf("targets %v", got)
	}
	if got := JobNames(jf); !reflect.DeepEqual(got, []string{"job1", "job2"}) {
		t.Errorf("names %v", got)
	}
}
