package fio

import (
	"math"
	"os"
	"path/filepath"
	"testing"
)

// The files in testdata are real outputs of fio 3.33 (`fio
// --output-format=json --output=F JOBFILE`), captured on an ext4 virtual
// disk with the job files next to them: buffered and direct (O_DIRECT)
// sequential read, sequential write and a random 50/50 mix with
// group_reporting (2 jobs each), a psync job file without group_reporting
// (two jobs of one name plus a writer), and a run interrupted with SIGINT
// (fio then prints "fio: terminating on signal 2" before the document).

func load(t *testing.T, name string) *Output {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	o, err := Parse(b)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return o
}

func approx(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

type wantDir struct {
	bw, iops                  float64
	ioBytes, ios              int64
	runtimeMs                 int64
	mean, p50, p95, p99, p999 float64 // ns
	max                       float64 // ns
}

func checkDir(t *testing.T, what string, d *Direction, w *wantDir) {
	t.Helper()
	if w == nil {
		if d != nil {
			t.Errorf("%s: want no I/O in this direction, got %+v", what, d)
		}
		return
	}
	if d == nil {
		t.Fatalf("%s: direction missing", what)
	}
	ms := func(ns float64) float64 { return ns / 1e6 }
	checks := []struct {
		name      string
		got, want float64
	}{
		{"bw_bytes", d.BWBytes, w.bw},
		{"mb_s", d.MBps, w.bw / 1e6},
		{"iops", d.IOPS, w.iops},
		{"io_bytes", float64(d.IOBytes), float64(w.ioBytes)},
		{"ios", float64(d.IOs), float64(w.ios)},
		{"runtime_s", d.RuntimeS, float64(w.runtimeMs) / 1000},
		{"clat mean", d.ClatMs.Mean, ms(w.mean)},
		{"clat p50", d.ClatMs.P50, ms(w.p50)},
		{"clat p95", d.ClatMs.P95, ms(w.p95)},
		{"clat p99", d.ClatMs.P99, ms(w.p99)},
		{"clat p99.9", d.ClatMs.P999, ms(w.p999)},
		{"clat max", d.ClatMs.Max, ms(w.max)},
	}
	for _, c := range checks {
		if !approx(c.got, c.want) {
			t.Errorf("%s %s = %v, want %v", what, c.name, c.got, c.want)
		}
	}
	l := d.ClatMs
	// fio's percentiles are the upper values of its latency histogram's bins
	// (64 per power of two, under 1.6% wide), so the top one can exceed the
	// exact maximum slightly: in fio-3.33-multi.json p99.9 is 10813440 ns and
	// max 10806217 ns.
	if !(l.P50 <= l.P95 && l.P95 <= l.P99 && l.P99 <= l.P999 && l.P999 <= l.Max*1.016) {
		t.Errorf("%s: percentiles not ordered: %+v", what, l)
	}
	// bw = iops x block size for fixed-size I/O (8k in these files).
	if bs := d.BWBytes / d.IOPS; math.Abs(bs-8192) > 8 && math.Abs(bs-4096) > 4 {
		t.Errorf("%s: bw/iops = %v bytes, want the block size", what, bs)
	}
}

func TestParseCaptured(t *testing.T) {
	cases := []struct {
		file        string
		name        string
		read, write *wantDir
	}{
		{file: "fio-3.33-seq-read.json", name: "seq-read",
			read: &wantDir{1475255624, 180084.915085, 2953461760, 360530, 2002, 451.994921, 258, 434, 532, 2736, 6143427}},
		{file: "fio-3.33-seq-read-direct.json", name: "seq-read-direct",
			read: &wantDir{143357953, 17499.750125, 286859264, 35017, 2001, 102077.006568, 59648, 111104, 823296, 5537792, 29428526}},
		{file: "fio-3.33-seq-write.json", name: "seq-write",
			write: &wantDir{7106791308, 867528.235882, 14220689408, 1735924, 2001, 310.687489, 266, 350, 430, 1512, 8202838}},
		{file: "fio-3.33-seq-write-direct.json", name: "seq-write-direct",
			write: &wantDir{102833742, 12552.947053, 205873152, 25131, 2002, 142699.591142, 66048, 602112, 1204224, 1974272, 12094956}},
		{file: "fio-3.33-rw-mix.json", name: "rw-mix",
			read:  &wantDir{91651326, 11187.906047, 183394304, 22387, 2001, 1227.948586, 764, 1720, 3696, 54016, 1957045},
			write: &wantDir{92081191, 11240.37981, 184254464, 22492, 2001, 478.693402, 310, 438, 716, 36096, 675569}},
		{file: "fio-3.33-rw-mix-direct.json", name: "rw-mix-direct",
			read:  &wantDir{52762866, 6440.77961, 105578496, 12888, 2001, 99494.652778, 62720, 337920, 831488, 1466368, 2238774},
			write: &wantDir{53512059, 6532.233883, 107077632, 13071, 2001, 171453.809349, 76288, 700416, 1302528, 2146304, 3946193}},
		{file: "fio-3.33-interrupted.json", name: "seq-read",
			read: &wantDir{2017478858, 246274.274662, 5215182848, 636619, 2585, 346.610271, 266, 374, 498, 3760, 5089098}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			o := load(t, c.file)
			if o.Version != "fio-3.33" || MajorVersion(o.Version) != 3 {
				t.Errorf("version %q (major %d)", o.Version, MajorVersion(o.Version))
			}
			rs := o.Results()
			if len(rs) != 1 {
				t.Fatalf("group_reporting: want one result, got %d", len(rs))
			}
			r := rs[0]
			if r.Name != c.name || r.Error != 0 {
				t.Errorf("name %q error %d", r.Name, r.Error)
			}
			checkDir(t, "read", r.Read, c.read)
			checkDir(t, "write", r.Write, c.write)
			if len(o.DiskUtil) == 0 || o.DiskUtil[0].Name == "" {
				t.Errorf("disk_util not parsed: %+v", o.DiskUtil)
			}
		})
	}
}

// Without group_reporting fio reports each job separately, under its
// section name: numjobs=2 gives two entries named alike.
func TestParseUngrouped(t *testing.T) {
	o := load(t, "fio-3.33-multi.json")
	rs := o.Results()
	if len(rs) != 3 {
		t.Fatalf("want 3 results, got %d", len(rs))
	}
	names := []string{rs[0].Name, rs[1].Name, rs[2].Name}
	if names[0] != "reader[1]" || names[1] != "reader[2]" || names[2] != "writer" {
		t.Errorf("names %v", names)
	}
	checkDir(t, "reader[1] read", rs[0].Read, &wantDir{2115516, 516.483516, 2117632, 517, 1001, 1934802.562863, 305152, 7110656, 8585216, 10813440, 10860845})
	checkDir(t, "reader[1] write", rs[0].Write, nil)
	checkDir(t, "reader[2] read", rs[1].Read, &wantDir{1790467, 437.125749, 1794048, 438, 1002, 2284522.984018, 1105920, 7307264, 8847360, 10813440, 10806217})
	checkDir(t, "writer read", rs[2].Read, nil)
	checkDir(t, "writer write", rs[2].Write, &wantDir{2432430673, 593855.144855, 2434863104, 594449, 1001, 1010.69785, 884, 1496, 1912, 4896, 2566898})
	if o.Jobs[0].Options["rw"] != "randread" {
		t.Errorf("job options not parsed: %v", o.Jobs[0].Options)
	}
}

func TestParseRejects(t *testing.T) {
	for _, in := range []string{"", "fio: some error\n", "{\"jobs\": []}", "{not json"} {
		if _, err := Parse([]byte(in)); err == nil {
			t.Errorf("Parse(%q): want an error", in)
		}
	}
}

func TestPercentileLookup(t *testing.T) {
	l := Lat{Percentile: map[string]float64{"99.900000": 7, "50.000000": 3, "99.990000": 9}}
	if v, ok := l.Pct(99.9); !ok || v != 7 {
		t.Errorf("p99.9 = %v %v", v, ok)
	}
	if _, ok := l.Pct(95); ok {
		t.Errorf("p95 should be missing")
	}
	if k := l.PercentileKeys(); len(k) != 3 || k[0] != 50 || k[2] != 99.99 {
		t.Errorf("keys %v", k)
	}
}
