package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/testutil"
)

// bcryptShim is the C source of a bcryptprimitives.dll for Wine releases
// that lack it (Debian 12's Wine 8.0): the Go runtime (1.22 on) loads
// ProcessPrng from it for random numbers and stops at start without it.
// It fills the buffer from advapi32's RtlGenRandom (SystemFunction036),
// which Wine has. A test fixture only: Windows 10 and 11 ship the DLL.
const bcryptShim = `#include <windows.h>
BOOLEAN WINAPI SystemFunction036(PVOID, ULONG);
BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T n) {
  while (n > 0) {
    ULONG k = n > 0x10000000 ? 0x10000000 : (ULONG)n;
    if (!SystemFunction036(data, k)) return FALSE;
    data += k; n -= k;
  }
  return TRUE;
}
`

// wineEnv is a Wine prefix of the test's own, ready to run a Go program
// built for windows/amd64: the environment to run wine with.
func wineEnv(t *testing.T, wine string) []string {
	t.Helper()
	dir := t.TempDir()
	prefix := filepath.Join(dir, "prefix")
	// The prefix, its menu entries and caches stay in the test's
	// directory: no desktop, no menu builder, no Mono or Gecko install.
	env := append(os.Environ(), "WINEPREFIX="+prefix, "WINEDEBUG=-all", "WINEDLLOVERRIDES=mscoree,mshtml=;winemenubuilder.exe=d",
		"HOME="+dir, "XDG_DATA_HOME="+filepath.Join(dir, "share"), "XDG_CONFIG_HOME="+filepath.Join(dir, "config"),
		"XDG_CACHE_HOME="+filepath.Join(dir, "cache"), "DISPLAY=")
	wineserver, err := exec.LookPath("wineserver")
	if err != nil {
		t.Fatalf("wine without wineserver on the PATH: %v", err)
	}
	// Registered before the temporary directory's removal runs (cleanups
	// run last first): the prefix's wineserver ends and has written its
	// files before the directory goes.
	t.Cleanup(func() {
		for _, a := range []string{"-k", "-w"} {
			c := exec.Command(wineserver, a)
			c.Env = env
			_ = c.Run()
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	boot := exec.CommandContext(ctx, wine, "wineboot", "--init")
	boot.Env = env
	if out, err := boot.CombinedOutput(); err != nil {
		t.Fatalf("wineboot: %v\n%s", err, out)
	}
	// wineboot returns before its wineserver has written the prefix out.
	server := exec.CommandContext(ctx, wineserver, "--wait")
	server.Env = env
	if out, err := server.CombinedOutput(); err != nil {
		t.Fatalf("wineserver --wait: %v\n%s", err, out)
	}
	sys32 := filepath.Join(prefix, "drive_c", "windows", "system32")
	if _, err := os.Stat(filepath.Join(sys32, "bcryptprimitives.dll")); err == nil {
		return env
	}
	gcc, err := exec.LookPath("x86_64-w64-mingw32-gcc")
	if err != nil && !testutil.InCI() {
		t.Skip("this Wine lacks bcryptprimitives.dll (Go programs need it) and x86_64-w64-mingw32-gcc is not here to build one: apt-get install gcc-mingw-w64-x86-64-win32")
	}
	if err != nil {
		t.Fatalf("this Wine lacks bcryptprimitives.dll (Go programs need it) and x86_64-w64-mingw32-gcc is not here to build one: apt-get install gcc-mingw-w64-x86-64-win32")
	}
	src := filepath.Join(dir, "shim.c")
	if err := os.WriteFile(src, []byte(bcryptShim), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(gcc, "-O2", "-shared", "-o", filepath.Join(sys32, "bcryptprimitives.dll"), src, "-ladvapi32").CombinedOutput(); err != nil {
		t.Fatalf("building the bcryptprimitives.dll shim: %v\n%s", err, out)
	}
	return env
}

// winPath is a path of this machine as the Windows program sees it (Wine
// maps / to drive Z:).
func winPath(p string) string { return `Z:` + strings.ReplaceAll(p, "/", `\`) }

// TestWindowsClientUnderWine: tunebench built for windows/amd64, run by
// Wine, is a client of a managed PostgreSQL on loopback: it loads tpcb at
// scale 1, runs it for a few seconds, checks it, writes a report, runs a
// two-run experiment against the DSN target and compares two runs; the
// run stored in the results store (a Windows path) is read back here, its
// driver host measured through gopsutil (no /proc on Windows). The managed
// server itself is refused on Windows with the way to use --dsn.
func TestWindowsClientUnderWine(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("Wine runs windows/amd64 programs on linux/amd64")
	}
	wine, err := exec.LookPath("wine")
	if err != nil {
		if testutil.InCI() {
			t.Fatalf("wine is required in CI (CI=%s): apt-get install wine64", os.Getenv("CI"))
		}
		t.Skip("wine not installed")
	}
	t.Parallel()
	exe := filepath.Join(t.TempDir(), "tunebench.exe")
	build := exec.Command("go", "build", "-o", exe, "github.com/tunebench/tunebench/cmd/tunebench")
	build.Env = append(os.Environ(), "GOOS=windows", "GOARCH=amd64", "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build for windows: %v\n%s", err, out)
	}
	env := wineEnv(t, wine)

	srv := pg.Server(t)
	db := testutil.CreateDB(t, srv)
	env = append(env, "PGPASSWORD="+srv.Password())
	dsn := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", srv.Port(), db)
	results, js, report := tempPath(t, "results.db"), tempPath(t, "run.json"), tempPath(t, "report.html")

	tb := func(want int, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, wine, append([]string{exe}, args...)...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("wine tunebench.exe %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		if code != want {
			t.Fatalf("wine tunebench.exe %s: exit %d, want %d\n%s", strings.Join(args, " "), code, want, out)
		}
		return string(out)
	}
	if out := tb(0, "version"); !strings.Contains(out, "windows/amd64") {
		t.Errorf("version does not say windows/amd64:\n%s", out)
	}
	if out := tb(2, "server", "start", "--dir", `C:\tb`); !strings.Contains(out, "runs on Linux and macOS, not on Windows") || !strings.Contains(out, "--dsn") {
		t.Errorf("the managed server on Windows:\n%s", out)
	}
	if out := tb(0, "load", "tpcb", "--dsn", dsn, "--scale", "1"); !strings.Contains(out, "done in") {
		t.Errorf("load printed no summary:\n%s", out)
	}
	out := tb(0, "run", "tpcb", "--dsn", dsn, "-T", "3s", "-c", "2", "--results", winPath(results), "--json", winPath(js))
	if !strings.Contains(out, "gopsutil on windows") || !strings.Contains(out, "not measured on Windows") && !strings.Contains(out, "not measured on windows") {
		t.Errorf("the run's host metrics do not say where they come from:\n%s", out)
	}
	var sum struct {
		RunID        int64  `json:"run_id"`
		Status       string `json:"status"`
		Transactions int64  `json:"transactions"`
	}
	b, err := os.ReadFile(js)
	if err != nil || json.Unmarshal(b, &sum) != nil || sum.RunID == 0 || sum.Status != "ok" || sum.Transactions == 0 {
		t.Fatalf("summary %s (%v)\n%s", b, err, out)
	}
	if out := tb(0, "check", "tpcb", "--dsn", dsn); !strings.Contains(out, "PASS") {
		t.Errorf("check:\n%s", out)
	}
	if out := tb(0, "report", strconv.FormatInt(sum.RunID, 10), "-o", winPath(report), "--results", winPath(results)); !strings.Contains(out, "report:") {
		t.Errorf("report:\n%s", out)
	}
	if html, err := os.ReadFile(report); err != nil || !strings.Contains(string(html), "<svg") {
		t.Errorf("the report (%v) has no chart", err)
	}

	// An experiment against the DSN target, and compare.
	exp := tempPath(t, "exp.yaml")
	if err := os.WriteFile(exp, []byte(fmt.Sprintf(`name: wine
workload:
  name: tpcb
  options: {scale: 1, duration: 1s, warmup: 0s}
target:
  dsn: "host=127.0.0.1 port=%d user=postgres dbname=%s sslmode=disable"
matrix:
  clients: [1, 2]
`, srv.Port(), db)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := tb(0, "experiment", "run", winPath(exp), "--results", winPath(results)); !strings.Contains(out, "experiment wine: done (2 runs") {
		t.Errorf("experiment:\n%s", out)
	}
	if out := tb(0, "compare", strconv.FormatInt(sum.RunID, 10), strconv.FormatInt(sum.RunID+1, 10), "--results", winPath(results)); !strings.Contains(out, "B/A") {
		t.Errorf("compare:\n%s", out)
	}

	// What it stored, read here by the Linux build.
	stored := getRun(t, results, sum.RunID)
	var s struct {
		Transactions int64 `json:"transactions"`
		Hosts        []struct {
			Role, Source string
			Means        map[string]float64
		} `json:"hosts"`
	}
	if err := json.Unmarshal(stored.Summary, &s); err != nil {
		t.Fatal(err)
	}
	if s.Transactions != sum.Transactions {
		t.Errorf("stored %d transactions, the run said %d", s.Transactions, sum.Transactions)
	}
	found := false
	for _, h := range s.Hosts {
		if h.Role == "driver" && h.Source == "gopsutil on windows" {
			found = true
			if u := h.Means["sys.cpu_user_pct"]; !(u > 0 && u <= 100) || !(h.Means["sys.mem_used_bytes"] > 0) {
				t.Errorf("driver host means %v", h.Means)
			}
		}
	}
	if !found {
		t.Errorf("no driver host measured through gopsutil: %s", stored.Summary)
	}
	if stored.Env == nil || !strings.Contains(string(stored.Env), `"os":"windows"`) {
		t.Errorf("the environment does not say windows: %.400s", stored.Env)
	}
}
