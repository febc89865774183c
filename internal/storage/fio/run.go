package fio

import (
	"github.com/tunebench/tunebench/internal/machine"

	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/tunebench/tunebench/internal/errs"
)

// InstallHint is the fix printed when fio is missing.
const InstallHint = "install fio: apt-get install fio (Debian/Ubuntu; dnf install fio on Fedora/RHEL, brew install fio on macOS), or set TUNEBENCH_FIO to the fio binary"

// Binary is an fio executable and its version.
type Binary struct {
	Path    string
	Version string // as fio --version prints it, e.g. "fio-3.33"
}

// Find locates fio. explicit (e.g. $TUNEBENCH_FIO), when not empty, must
// name the binary; otherwise fio is searched in pathList (a PATH value). A
// missing fio is an environment error whose hint names the install command.
func Find(ctx context.Context, explicit, pathList string) (*Binary, error) {
	var path string
	if explicit != "" {
		if !isExecutable(explicit) {
			return nil, errs.New(errs.KindEnvironment, InstallHint, "fio not found: %s is not an executable file", explicit)
		}
		path = explicit
	} else {
		for _, d := range filepath.SplitList(pathList) {
			if d == "" {
				continue
			}
			if c := filepath.Join(d, "fio"); isExecutable(c) {
				path = c
				break
			}
		}
		if path == "" {
			return nil, errs.New(errs.KindEnvironment, InstallHint, "fio not found in PATH (tunebench storage runs the fio storage benchmark)")
		}
	}
	vctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	out, err := exec.CommandContext(vctx, path, "--version").CombinedOutput()
	v := strings.TrimSpace(string(out))
	if err != nil || !strings.HasPrefix(v, "fio-") {
		return nil, errs.New(errs.KindEnvironment, InstallHint, "%s does not look like fio (fio --version: %q, %v)", path, firstLine(v), err)
	}
	return &Binary{Path: path, Version: v}, nil
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// ChooseEngine picks libaio when this fio can load it (Linux only), else
// psync, and says why.
func (b *Binary) ChooseEngine(ctx context.Context) (engine, why string) {
	if runtime.GOOS != "linux" {
		return "psync", "libaio is Linux-only"
	}
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	out, err := exec.CommandContext(cctx, b.Path, "--enghelp=libaio").CombinedOutput()
	o := string(out)
	if err == nil && !strings.Contains(o, "not found") && !strings.Contains(o, "not loadable") {
		return "libaio", "libaio is available"
	}
	reason := firstLine(strings.TrimSpace(o))
	if reason == "" && err != nil {
		reason = err.Error()
	}
	return "psync", "libaio is not available in this fio (" + reason + ")"
}

// CheckJobFile runs `fio --parse-only` on a job file: syntax errors and
// unknown options are reported before any I/O.
func (b *Binary) CheckJobFile(ctx context.Context, path string) error {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(cctx, b.Path, "--parse-only", path).CombinedOutput()
	if err != nil {
		return fmt.Errorf("fio --parse-only %s: %v: %s", path, err, tail(string(out), 5))
	}
	return nil
}

// RunResult is what one fio invocation left.
type RunResult struct {
	JobPath     string  // the job file written for this run
	Raw         []byte  // fio's output file as written
	Output      *Output // parsed; nil when fio wrote no usable JSON
	Stderr      string
	Interrupted bool // ctx was cancelled: fio got SIGINT and stopped early
	Elapsed     time.Duration
}

// Run writes jobText to workDir/name.fio and runs fio on it with JSON
// output in workDir (fio's working directory). When ctx is cancelled fio
// gets SIGINT, stops its jobs and still writes its JSON (the partial result
// is returned with Interrupted set). A failing fio gives an error that
// carries the end of its stderr; the result is returned with it.
func (b *Binary) Run(ctx context.Context, jobText, workDir, name string) (*RunResult, error) {
	jobPath := filepath.Join(workDir, name+".fio")
	outPath := filepath.Join(workDir, name+".json")
	if err := os.WriteFile(jobPath, []byte(jobText), 0o600); err != nil {
		return nil, err
	}
	_ = os.Remove(outPath)
	return b.RunFile(ctx, jobPath, outPath, workDir)
}

// RunFile runs fio on an existing job file, writing JSON to outPath, with
// dir as the working directory. See Run.
func (b *Binary) RunFile(ctx context.Context, jobPath, outPath, dir string) (*RunResult, error) {
	cmd := exec.Command(b.Path, "--output-format=json", "--output="+outPath, jobPath)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Stdout = &stderr // fio prints nothing else with --output; keep anything it does
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, errs.Wrap(errs.KindEnvironment, err, InstallHint, "cannot start %s", b.Path)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var waitErr error
	interrupted := false
	select {
	case waitErr = <-done:
	case <-ctx.Done():
		interrupted = true
		// fio stops its jobs on SIGINT and still reports what they did.
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case waitErr = <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			waitErr = <-done
		}
	}
	res := &RunResult{JobPath: jobPath, Stderr: stderr.String(), Interrupted: interrupted, Elapsed: time.Since(t0)}
	raw, rerr := os.ReadFile(outPath)
	if rerr == nil {
		res.Raw = raw
		if o, perr := Parse(raw); perr == nil {
			res.Output = o
		} else if !interrupted && waitErr == nil {
			return res, fmt.Errorf("reading fio's output %s: %w", outPath, perr)
		}
	}
	if interrupted {
		return res, nil
	}
	if waitErr != nil {
		msg := tail(strings.TrimSpace(res.Stderr), 8)
		if msg == "" && res.Output != nil {
			for _, j := range res.Output.Jobs {
				if j.Error != 0 {
					msg = fmt.Sprintf("job %s: error %d (%s)", j.Name, j.Error, syscall.Errno(j.Error).Error())
					break
				}
			}
		}
		return res, fmt.Errorf("fio failed (%v): %s", waitErr, msg)
	}
	if res.Output == nil {
		return res, fmt.Errorf("fio wrote no JSON output to %s: %v", outPath, rerr)
	}
	return res, nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// tail keeps the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// DropCachesPath is the kernel's page cache control file.
const DropCachesPath = "/proc/sys/vm/drop_caches"

// CanDropCaches says whether DropCaches can work: the process must be root
// (euid 0) and path writable. The reason says why not.
func CanDropCaches(path string, euid int) (bool, string) {
	if euid != 0 {
		return false, fmt.Sprintf("not root (euid %d): dropping the page cache needs root", euid)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return false, fmt.Sprintf("cannot open %s for writing: %v", path, err)
	}
	f.Close()
	return true, ""
}

// DropCaches flushes dirty pages (sync) and drops the page cache, dentries
// and inodes (echo 3 > path).
func DropCaches(path string) error {
	syncAll()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString("3\n"); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Target describes the path under test.
type Target struct {
	Path    string
	IsDir   bool
	Device  bool // a block or character device
	Block   bool // a block device
	Mounted bool // a device with a mounted filesystem (Linux; false when unknown)
}

// Inspect stats a path given as the storage target.
func Inspect(path string) (Target, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return Target{}, err
	}
	t := Target{Path: path, IsDir: fi.IsDir()}
	if fi.Mode()&os.ModeDevice != 0 {
		t.Device = true
		t.Block = fi.Mode()&os.ModeCharDevice == 0
		t.Mounted = deviceMounted(fi)
	}
	return t, nil
}

// JobFileTargets returns the paths a job file names in filename= and
// directory= (fio's ':'-separated lists split, '\:' unescaped), so the
// caller can refuse devices.
func JobFileTargets(text string) []string {
	var out []string
	for _, ln := range strings.Split(text, "\n") {
		ln = strings.TrimSpace(ln)
		if ln == "" || ln[0] == ';' || ln[0] == '#' || ln[0] == '[' {
			continue
		}
		k, v, ok := strings.Cut(ln, "=")
		if !ok {
			continue
		}
		k = strings.ToLower(strings.TrimSpace(k))
		if k != "filename" && k != "directory" {
			continue
		}
		out = append(out, splitUnescaped(strings.TrimSpace(v))...)
	}
	return out
}

func splitUnescaped(v string) []string {
	var out []string
	var cur strings.Builder
	for i := 0; i < len(v); i++ {
		switch {
		case v[i] == '\\' && i+1 < len(v) && v[i+1] == ':':
			cur.WriteByte(':')
			i++
		case v[i] == ':':
			out = append(out, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(v[i])
		}
	}
	out = append(out, cur.String())
	var clean []string
	for _, s := range out {
		if s != "" {
			clean = append(clean, s)
		}
	}
	return clean
}

// JobNames lists the job sections of a job file ([global] excluded).
func JobNames(text string) []string {
	var out []string
	for _, ln := range strings.Split(text, "\n") {
		ln = strings.TrimSpace(ln)
		if len(ln) > 2 && ln[0] == '[' && ln[len(ln)-1] == ']' {
			if n := ln[1 : len(ln)-1]; n != "global" {
				out = append(out, n)
			}
		}
	}
	return out
}

// ErrNoSpace is returned by CheckSpace when the data set does not fit.
var ErrNoSpace = errors.New("not enough free space")

// CheckSpace checks that need bytes fit in dir's filesystem (best effort:
// nil when the free space cannot be read).
func CheckSpace(dir string, need int64) (free int64, err error) {
	free, ok := machine.FreeBytes(dir)
	if !ok {
		return -1, nil
	}
	if need > free {
		return free, ErrNoSpace
	}
	return free, nil
}
