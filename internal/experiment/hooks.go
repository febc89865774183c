package experiment

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/human"
	"github.com/tunebench/tunebench/internal/proc"
	"github.com/tunebench/tunebench/internal/store"
)

// hookWaitDelay is how long a hook's output is read after its shell exits
// (a background child may keep it open).
var hookWaitDelay = 5 * time.Second

// HookOutputMax is how much of a hook's output is kept: its first and
// last halves, the middle cut.
const HookOutputMax = 64 << 10

// HookVarer is a Target that tells hooks where they are: its data
// directory, layout mount point and how to connect (PGHOST...).
type HookVarer interface {
	HookVars() map[string]string
}

// HookExec runs one hook command with env as its whole environment and
// returns its record (point, command and times filled in).
type HookExec func(ctx context.Context, h Hook, env []string) store.HookRecord

// RunHookCommand runs h.Command through the shell (sh -c; cmd /C on
// Windows) in its own process group, killed with everything it started
// when its timeout passes or ctx ends; stdout and stderr are kept
// together (HookOutputMax). env is its whole environment.
func RunHookCommand(ctx context.Context, h Hook, env []string) store.HookRecord {
	rec := store.HookRecord{Point: h.Point, Command: h.Command, StartedAt: time.Now(), ExitCode: -1, PlanIndex: -1}
	tctx, cancel := context.WithTimeout(ctx, h.TimeoutD())
	defer cancel()
	cmd := proc.Shell(tctx, h.Command)
	cmd.Env = env
	cmd.WaitDelay = hookWaitDelay // a child that keeps the pipes open
	out := &capped{max: HookOutputMax}
	cmd.Stdout, cmd.Stderr = out, out
	err := cmd.Run()
	rec.ElapsedS = time.Since(rec.StartedAt).Seconds()
	rec.Output = out.String()
	var ee *exec.ExitError
	switch {
	case tctx.Err() == context.DeadlineExceeded && ctx.Err() == nil:
		rec.TimedOut = true
		rec.Error = fmt.Sprintf("timed out after %s (hooks.%s timeout)", h.TimeoutD(), h.Point)
	case ctx.Err() != nil:
		rec.Error = "interrupted"
	case err == nil:
		rec.ExitCode = 0
	case errors.Is(err, exec.ErrWaitDelay) && cmd.ProcessState != nil && cmd.ProcessState.ExitCode() >= 0:
		// The shell exited; a process it started in the background kept
		// its output open (give it a redirection: cmd > file 2>&1 &).
		rec.ExitCode = cmd.ProcessState.ExitCode()
		rec.Output += "\n[tunebench: a process the hook started in the background kept its output open; what it wrote after the hook ended is not kept]\n"
	case errors.As(err, &ee) && ee.ExitCode() >= 0:
		rec.ExitCode = ee.ExitCode()
	default:
		rec.Error = err.Error()
	}
	return rec
}

// capped keeps the first and last max/2 bytes written.
type capped struct {
	mu         sync.Mutex
	max        int
	head, tail []byte
	dropped    int64
}

func (c *capped) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(b)
	if room := c.max/2 - len(c.head); room > 0 {
		k := min(room, len(b))
		c.head = append(c.head, b[:k]...)
		b = b[k:]
	}
	c.tail = append(c.tail, b...)
	if over := len(c.tail) - c.max/2; over > 0 {
		c.dropped += int64(over)
		c.tail = append(c.tail[:0], c.tail[over:]...)
	}
	return n, nil
}

func (c *capped) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b bytes.Buffer
	b.Write(c.head)
	if c.dropped > 0 {
		fmt.Fprintf(&b, "\n[... %d bytes cut ...]\n", c.dropped)
	}
	b.Write(c.tail)
	return b.String()
}

// HookFailure says in one line why a hook failed, with the end of its
// output.
func HookFailure(h *store.HookRecord) string {
	why := h.Error
	if why == "" {
		why = "exit status " + strconv.Itoa(h.ExitCode)
	}
	msg := fmt.Sprintf("hook %s `%s` failed: %s", h.Point, h.Command, why)
	if t := human.LastLines(h.Output, 3); t != "" {
		msg += ": " + t
	}
	return msg
}

// hookVars are the variables of a hook at step s: where in the
// experiment it runs, and the target's (data directory, mount point,
// connection).
func (p *Plan) hookVars(base []string, t Target, s Step, runID int64, status string) []string {
	vars := map[string]string{
		"TUNEBENCH_HOOK":       s.Hook.Point,
		"TUNEBENCH_EXPERIMENT": p.Name,
		"TUNEBENCH_WORKLOAD":   p.Workload,
	}
	if s.Hook.Point != HookBeforeExperiment && s.Hook.Point != HookAfterExperiment {
		c := &p.Configs[s.Config]
		vars["TUNEBENCH_CONFIG"] = c.Label
		vars["TUNEBENCH_CONFIG_INDEX"] = strconv.Itoa(c.Index + 1)
		for _, kv := range c.Values {
			vars["TUNEBENCH_VALUE_"+envName(kv.Name)] = kv.Value
		}
	}
	if s.PerRun {
		r := p.Runs[s.Run]
		vars["TUNEBENCH_RUN"] = strconv.Itoa(s.Run + 1)
		vars["TUNEBENCH_REPETITION"] = strconv.Itoa(r.Repetition)
		vars["TUNEBENCH_WARMUP"] = strconv.FormatBool(r.Warmup)
		if p.XAxis != "" {
			vars["TUNEBENCH_X"] = p.FormatX(r.X)
		}
	}
	if runID > 0 {
		vars["TUNEBENCH_RUN_ID"] = strconv.FormatInt(runID, 10)
	}
	if status != "" {
		vars["TUNEBENCH_RUN_STATUS"] = status
	}
	if hv, ok := t.(HookVarer); ok && t != nil {
		for k, v := range hv.HookVars() {
			vars[k] = v
		}
	}
	out := make([]string, 0, len(base)+len(vars))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if vars[k] != "" || (vars["PGHOST"] != "" && overridesPGHost[k]) {
			continue
		}
		out = append(out, kv)
	}
	for k, v := range vars {
		out = append(out, k+"="+v)
	}
	return out
}

// overridesPGHost are the variables that would take a hook's psql
// elsewhere than the PGHOST and PGPORT tunebench gives it.
var overridesPGHost = map[string]bool{"PGHOSTADDR": true, "PGSERVICE": true, "PGSERVICEFILE": true}

// envName makes a matrix key a variable name: vm.dirty_ratio ->
// VM_DIRTY_RATIO.
func envName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z':
			return r - 'a' + 'A'
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			return r
		}
		return '_'
	}, s)
}

// hookError is the error of a hook whose failure stops the experiment.
func hookError(h *store.HookRecord) error {
	return errs.New(errs.KindEnvironment, "run the command by hand to see why; its whole output is stored (tunebench experiment show NAME --hooks)",
		"%s", HookFailure(h))
}

// hookState is what the hooks decided so far in one Execute: runs and a
// block skipped by a failed before hook, the before_run records waiting
// for their run's id, and the runs' results for the after_run hooks.
type hookState struct {
	skipBlock       int // a block whose before_config failed (-1: none)
	skipBlockWhy    string
	skipRun         map[int]string // plan run -> why it is skipped
	pending         map[int][]store.HookRecord
	runIDs          map[int]RunResult
	afterExperiment error
}

// skipped says why step s is not done ("" when it is): its run or block
// was skipped by a failed before hook.
func (hk *hookState) skipped(p *Plan, s Step) string {
	if !s.PerRun {
		return hk.skippedHook(s)
	}
	if why := hk.skipRun[s.Run]; why != "" {
		return why
	}
	if hk.skipBlock >= 0 && p.Runs[s.Run].Block == hk.skipBlock {
		return hk.skipBlockWhy
	}
	return ""
}

// skippedHook says why a before_config hook is not run: an earlier one of
// its block failed.
func (hk *hookState) skippedHook(s Step) string {
	if s.Kind == StepHook && s.Hook.Point == HookBeforeConfig && hk.skipBlock >= 0 && s.Block == hk.skipBlock {
		return hk.skipBlockWhy
	}
	return ""
}

// after applies the failure policy to a hook's record and stores it: a
// failed before_experiment stops the experiment; a failed before_config
// skips its configuration's runs, a failed before_run its run; a failed
// after_run adds a status reason to the stored run; a failed
// after_experiment is the experiment's error. The records of before_run
// wait for their run's id.
func (hk *hookState) after(ctx context.Context, st Store, p *Plan, s Step, rec *store.HookRecord, save func(store.HookRecord), runErr *error) error {
	ok := rec.OK()
	switch s.Hook.Point {
	case HookBeforeRun:
		hk.pending[s.Run] = append(hk.pending[s.Run], *rec)
		if !ok {
			hk.skipRun[s.Run] = HookFailure(rec)
		}
		return nil
	case HookBeforeExperiment:
		save(*rec)
		if !ok {
			return hookError(rec)
		}
	case HookBeforeConfig:
		save(*rec)
		if !ok {
			hk.skipBlock, hk.skipBlockWhy = s.Block, HookFailure(rec)
		}
	case HookAfterRun:
		save(*rec)
		if !ok && rec.RunID > 0 && ctx.Err() == nil { // an interrupt is not the run's fault
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer cancel()
			if err := st.AddRunReason(sctx, rec.RunID, "after_run_hook", HookFailure(rec)); err != nil {
				return err
			}
			if *runErr == nil {
				*runErr = errs.New(errs.KindRunErrors, "its output is stored: tunebench experiment show "+p.Name+" --hooks",
					"run %d: %s", rec.RunID, HookFailure(rec))
			}
		}
	case HookAfterExperiment:
		save(*rec)
		if !ok {
			hk.afterExperiment = hookError(rec)
		}
	}
	return nil
}
