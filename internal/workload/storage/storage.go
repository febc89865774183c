// Package storage is the fio storage baseline workload (`tunebench
// storage`): five standard tests (sequential and random reads and writes,
// a 50/50 mix) or the user's own job file, run by fio, read from fio's
// JSON output. The fio mechanics (job files, running fio, parsing) are in
// internal/storage/fio.
package storage

import (
	"strings"
	"time"

	"github.com/tunebench/tunebench/internal/option"
	"github.com/tunebench/tunebench/internal/storage/fio"
	"github.com/tunebench/tunebench/internal/workload"
)

// Environment variables the workload reads (through RunEnv).
const (
	// EnvFio names the fio binary to use instead of searching PATH.
	EnvFio = "TUNEBENCH_FIO"
	// EnvDropCachesFile replaces /proc/sys/vm/drop_caches (tests).
	EnvDropCachesFile = "TUNEBENCH_DROP_CACHES_FILE"
)

// Workload is the registry entry.
type Workload struct{}

// New returns the workload for the registry.
func New() workload.Workload { return Workload{} }

// Meta describes the workload; `tunebench storage` runs it.
func (Workload) Meta() workload.Meta {
	return workload.Meta{
		Name:        "storage",
		Description: "fio storage baseline: sequential/random read and write, 50/50 mix (runs fio, reads its JSON)",
		Version:     "1",
		Command:     "storage",
		Layouts:     true,
		Ops:         fio.TestNames(),
		Platforms:   []string{"linux", "darwin"},
		PlatformsWhy: "its fio job files and the page-cache drop between tests are written for Linux (and macOS, " +
			"where fio runs with psync); Windows' fio needs other engines, not tried",
	}
}

// Options declares the workload's options (all of the run).
func (Workload) Options() option.Set {
	return option.Set{
		{Name: "dir", Kind: option.KindString, Default: "",
			Doc: "directory on the filesystem to test (required on the command line; in an experiment, default: next to the managed server's data); a block device only with --allow-destroy"},
		{Name: "size", Kind: option.KindString, Default: "1G", Validate: checkSize("size"),
			Doc: "data set size in total, split evenly between the jobs (k, M, G, T: powers of 1024)"},
		{Name: "block_size", Kind: option.KindString, Default: "8k", Validate: checkSize("block_size"),
			Doc: "bytes per I/O (fio bs=)"},
		{Name: "jobs", Kind: option.KindInt, Default: "4", Min: 1, HasMin: true, Max: 1024, HasMax: true,
			Doc: "concurrent fio jobs (numjobs=), one file each"},
		{Name: "iodepth", Kind: option.KindInt, Default: "1", Min: 1, HasMin: true,
			Doc: "I/Os in flight per job (fio iodepth=; only asynchronous engines like libaio with --direct use it)"},
		{Name: "runtime", Kind: option.KindDuration, Default: "60s",
			Doc: "measured time per test (whole seconds)"},
		{Name: "direct", Kind: option.KindBool, Default: "false",
			Doc: "direct I/O (O_DIRECT): bypass the page cache"},
		{Name: "tests", Kind: option.KindList, Default: strings.Join(fio.TestNames(), ","), Validate: checkTests,
			Doc: "tests to run, comma-separated, in this order (" + strings.Join(fio.TestNames(), ", ") + ")"},
		{Name: "drop_caches", Kind: option.KindBool, Default: "false",
			Doc: "drop the page cache before each test (needs root)"},
		{Name: "ioengine", Kind: option.KindString, FlagOnly: true, Default: "",
			Doc: "fio ioengine (default libaio when available, else psync)"},
		{Name: "job_file", Kind: option.KindString, FlagOnly: true, Default: "",
			Doc: "run this fio job file instead of the standard tests"},
		{Name: "allow_destroy", Kind: option.KindBool, FlagOnly: true,
			Doc: "allow a block device as the target: its contents are destroyed"},
	}
}

func checkSize(name string) func(string) (string, error) {
	return func(text string) (string, error) {
		if _, err := fio.ParseSize(text); err != nil {
			return "", option.Errorf("sizes are like 64M, 4G or 8k", option.Ref(name)+": "+err.Error())
		}
		return text, nil
	}
}

func checkTests(text string) (string, error) {
	if _, err := fio.ParseTests(option.SplitList(text)); err != nil {
		return "", option.Errorf("tests are "+strings.Join(fio.TestNames(), ", "), "{tests}: "+err.Error())
	}
	return text, nil
}

// Validate: a job file replaces the standard tests.
func (Workload) Validate(p option.Phase, v option.Values, given option.Given) error {
	if p == option.PhaseRun && v.String("job_file") != "" && given != nil && given("tests") {
		return option.Errorf("give {tests} or {job_file}, not both", "{tests} and {job_file} both given")
	}
	return nil
}

// RunHelp is the help of `tunebench storage` and `tunebench run storage`.
func (Workload) RunHelp() workload.Help {
	return workload.Help{
		Use:   "--dir D [--size 1G] [--block-size 8k] [--jobs N] [--runtime 60s] [--direct] [--tests ...]",
		Short: "Storage baseline with fio: sequential/random read and write, 50/50 mix",
		Long: `Runs fio (which must be installed) with generated job files for five standard
tests, one fio process per test, reads fio's JSON output and stores per test the
bandwidth, IOPS and completion latency (mean, p50, p95, p99, p99.9, max) of reads
and writes, with the fio version and the job files:

  seq-read    rw=read          rand-read   rw=randread
  seq-write   rw=write         rand-write  rw=randwrite
  rw-mix      rw=randrw, rwmixread=50

The data set (--size, split evenly between the --jobs jobs) goes into a new
directory under --dir, laid out by fio before the first test, shared by all tests
and removed at the end. ioengine is libaio when fio can load it, else psync.
Without --direct, I/O goes through the page cache: reads of a data set smaller
than memory measure the cache. --drop-caches drops the page cache before each
test (sync; echo 3 > /proc/sys/vm/drop_caches), which needs root; when it cannot,
tunebench says so and records it.

--job-file F runs your own fio job file instead (one fio process, every job
reported; relative file names land in the new directory under --dir).

A block device as --dir (or in a job file) is refused unless --allow-destroy:
fio writes to it directly and destroys its contents. See docs/storage.md.`,
	}
}

// Headline: the IOPS of all tests together, against jobs.
func (Workload) Headline() workload.Headline {
	return workload.Headline{Metric: "iops", Label: "IOPS", Unit: "IOPS (I/O per second, all tests)", XAxis: "jobs"}
}

// RunTime: each test runs for runtime, plus fio's start and its layout.
func (Workload) RunTime(o option.Values) (time.Duration, bool) {
	n := len(o.List("tests"))
	return time.Duration(n) * (o.Duration("runtime") + 5*time.Second), true
}

// LoadTime: nothing is loaded.
func (Workload) LoadTime(option.Values) time.Duration { return 0 }

// DataBytes: nothing is loaded.
func (Workload) DataBytes(option.Values) int64 { return 0 }
