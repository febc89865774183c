// Package fio drives the fio storage benchmark: it generates job files for
// tunebench's five standard tests (or takes the user's own), runs fio with
// JSON output (one fio process per test, so the page cache can be dropped
// between tests), and parses fio's JSON into Go structs.
//
// Nothing here prints; the CLI reports progress through the values returned.
package fio

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Test is one standard test: an fio rw= mode and, for mixes, the read share.
type Test struct {
	Name    string // e.g. "seq-read"
	RW      string // fio's rw= value
	MixRead int    // rwmixread= percentage for mixed tests, 0 otherwise
	Doc     string
}

// Writes reports whether the test writes.
func (t Test) Writes() bool { return strings.Contains(t.RW, "write") || strings.Contains(t.RW, "rw") }

// StandardTests returns the five standard tests in their usual order (reads
// first, so the files fio lays out before the first test are read before
// anything rewrites them).
func StandardTests() []Test {
	return []Test{
		{Name: "seq-read", RW: "read", Doc: "sequential read"},
		{Name: "seq-write", RW: "write", Doc: "sequential write"},
		{Name: "rand-read", RW: "randread", Doc: "random read"},
		{Name: "rand-write", RW: "randwrite", Doc: "random write"},
		{Name: "rw-mix", RW: "randrw", MixRead: 50, Doc: "random 50/50 read/write mix"},
	}
}

// TestNames lists the standard test names.
func TestNames() []string {
	var out []string
	for _, t := range StandardTests() {
		out = append(out, t.Name)
	}
	return out
}

// ParseTests resolves test names (as given to --tests) in the order given;
// an empty list means all five. Unknown or repeated names are errors.
func ParseTests(names []string) ([]Test, error) {
	all := StandardTests()
	if len(names) == 0 {
		return all, nil
	}
	seen := map[string]bool{}
	var out []Test
	for _, n := range names {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if seen[n] {
			return nil, fmt.Errorf("test %q given twice", n)
		}
		seen[n] = true
		found := false
		for _, t := range all {
			if t.Name == n {
				out = append(out, t)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("unknown test %q (tests: %s)", n, strings.Join(TestNames(), ", "))
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no tests given")
	}
	return out, nil
}

// JobOptions are the parameters of a generated job file.
type JobOptions struct {
	// Target is the directory the data files go into, or the device path
	// when Device is set.
	Target string
	// Device says Target is a block device: fio does I/O on it directly.
	Device bool
	// TotalSize is the data set size in bytes, split evenly between the jobs
	// (fio's size= is per job).
	TotalSize int64
	BlockSize int64 // bytes per I/O
	Jobs      int   // fio numjobs=
	IODepth   int   // fio iodepth= (matters for asynchronous engines only)
	Runtime   time.Duration
	Direct    bool   // O_DIRECT: bypass the page cache
	IOEngine  string // libaio, psync, ...
}

// FilePrefix names the data files in directory mode: one file per job,
// shared by all tests so fio lays them out only once.
const FilePrefix = "tunebench-fio"

// PerJobSize is the size fio's size= gets: TotalSize / Jobs rounded down to
// whole blocks.
func (o JobOptions) PerJobSize() int64 {
	if o.Jobs < 1 || o.BlockSize < 1 {
		return 0
	}
	per := o.TotalSize / int64(o.Jobs)
	return per - per%o.BlockSize
}

// Validate checks the options before a job file is written.
func (o JobOptions) Validate() error {
	switch {
	case o.Target == "":
		return errors.New("no target directory")
	case strings.ContainsAny(o.Target, "\n\r$"):
		return fmt.Errorf("path %q contains a newline or '$', which fio job files cannot carry", o.Target)
	case o.BlockSize < 512:
		return fmt.Errorf("block size %d is below 512 bytes", o.BlockSize)
	case o.Jobs < 1:
		return fmt.Errorf("jobs %d: give 1 or more", o.Jobs)
	case o.IODepth < 1:
		return fmt.Errorf("iodepth %d: give 1 or more", o.IODepth)
	case o.Runtime < time.Second:
		return fmt.Errorf("runtime %v: give 1s or more", o.Runtime)
	case o.Runtime%time.Second != 0:
		return fmt.Errorf("runtime %v: give whole seconds", o.Runtime)
	case o.IOEngine == "" || strings.ContainsAny(o.IOEngine, " \t\n\r=$"):
		return fmt.Errorf("invalid ioengine %q", o.IOEngine)
	case o.PerJobSize() < o.BlockSize:
		return fmt.Errorf("size %d split between %d jobs leaves less than one %d-byte block per job", o.TotalSize, o.Jobs, o.BlockSize)
	}
	return nil
}

// escapePath escapes ':' which fio treats as a separator in filename= and
// directory= values.
func escapePath(p string) string { return strings.ReplaceAll(p, ":", `\:`) }

// JobFile renders the job file of one test. The result is a complete fio job
// file: running `fio --output-format=json FILE` by hand gives the same test.
func JobFile(t Test, o JobOptions) (string, error) {
	if err := o.Validate(); err != nil {
		return "", err
	}
	if t.Name == "" || t.RW == "" {
		return "", errors.New("empty test")
	}
	b := &strings.Builder{}
	line := func(k string, v any) { fmt.Fprintf(b, "%s=%v\n", k, v) }
	direct := 0
	if o.Direct {
		direct = 1
	}
	per := o.PerJobSize()
	fmt.Fprintf(b, "; tunebench storage test %s: %s, %s blocks, %d job(s) x %s, %s, ioengine %s%s\n",
		t.Name, t.Doc, FormatSize(o.BlockSize), o.Jobs, FormatSize(per), o.Runtime, o.IOEngine, map[bool]string{true: ", direct I/O", false: ""}[o.Direct])
	b.WriteString("[global]\n")
	line("ioengine", o.IOEngine)
	line("iodepth", o.IODepth)
	line("direct", direct)
	line("bs", o.BlockSize)
	line("size", per)
	line("numjobs", o.Jobs)
	line("runtime", int64(o.Runtime/time.Second))
	line("time_based", 1)
	line("group_reporting", 1)
	// Drop the data files' cached pages before each job (fio's default,
	// stated here so a reader of the job file sees it).
	line("invalidate", 1)
	if o.Device {
		line("filename", escapePath(o.Target))
		// Each job gets its own region of the device.
		line("offset_increment", per)
	} else {
		line("directory", escapePath(o.Target))
		line("filename_format", FilePrefix+".$jobnum")
	}
	fmt.Fprintf(b, "\n[%s]\n", t.Name)
	line("rw", t.RW)
	if t.MixRead > 0 {
		line("rwmixread", t.MixRead)
	}
	return b.String(), nil
}

// ParseSize parses a size like fio does: a number with an optional k, m, g
// or t suffix (powers of 1024; "KiB", "MB" and the like are accepted and mean
// the same) or plain bytes.
func ParseSize(s string) (int64, error) {
	orig := s
	s = strings.TrimSpace(strings.ToLower(s))
	s = strings.TrimSuffix(s, "b")
	s = strings.TrimSuffix(s, "i")
	mult := int64(1)
	if n := len(s); n > 0 {
		switch s[n-1] {
		case 'k':
			mult = 1 << 10
		case 'm':
			mult = 1 << 20
		case 'g':
			mult = 1 << 30
		case 't':
			mult = 1 << 40
		}
		if mult > 1 {
			s = s[:n-1]
		}
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || v <= 0 || v*float64(mult) > 1<<62 {
		return 0, fmt.Errorf("invalid size %q (examples: 8k, 64M, 4G)", orig)
	}
	return int64(v * float64(mult)), nil
}

// FormatSize renders bytes with the largest binary unit that divides them
// (8192 -> "8k", 4 GiB -> "4G"), else in bytes.
func FormatSize(n int64) string {
	for _, u := range []struct {
		s string
		v int64
	}{{"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"k", 1 << 10}} {
		if n >= u.v && n%u.v == 0 {
			return strconv.FormatInt(n/u.v, 10) + u.s
		}
	}
	return strconv.FormatInt(n, 10)
}
