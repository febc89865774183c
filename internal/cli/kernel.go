package cli

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/experiment"
	"github.com/tunebench/tunebench/internal/kernel"
	"github.com/tunebench/tunebench/internal/store"
)

// restoreKernelLeftovers restores the kernel settings a tunebench process
// that was killed left changed (its journal entries name a holder that
// ended), before any command does its work. Commands that only print
// (help, version) skip it.
func restoreKernelLeftovers(s *State, cmd *cobra.Command) {
	if runtime.GOOS != "linux" {
		return
	}
	switch cmd.Name() {
	case "help", "version", "completion", "__complete", "__completeNoDesc":
		return
	}
	j := kernel.Journal{Path: kernel.JournalPath(s.Getenv)}
	if _, err := os.Stat(j.Path); err != nil {
		return
	}
	restored, err := j.RestoreLeftovers()
	for _, e := range restored {
		what := e.Key
		if e.Dev != "" {
			what += " of " + e.Dev
		}
		s.eprintf("restored kernel setting %s to %s (was %s), left changed by a tunebench process that ended without restoring it (%s)\n",
			what, e.Previous, e.Value, e.Holder)
	}
	if err != nil {
		s.eprintf("warning: kernel settings left changed by an earlier tunebench process could not be restored: %v\n", err)
		if h := errs.HintOf(err); h != "" {
			s.eprintf("  fix: %s\n", h)
		} else {
			s.eprintf("  fix: run tunebench as root once to restore them (the journal is %s)\n", j.Path)
		}
	}
}

// printHooks says what the experiment's hooks did: a count and the
// failures (with all: every hook and its output).
func printHooks(ctx context.Context, s *State, st *store.Store, expID int64, all bool, how string) error {
	hs, err := st.Hooks(ctx, expID)
	if err != nil || len(hs) == 0 {
		return err
	}
	failed := 0
	for i := range hs {
		if !hs[i].OK() {
			failed++
		}
	}
	s.printf("\nhooks: %d ran, %d failed", len(hs), failed)
	if !all {
		s.printf(" (%s lists them with their output)", how)
	}
	s.printf("\n")
	for i := range hs {
		h := &hs[i]
		if !all && h.OK() {
			continue
		}
		where := h.Point
		if h.PlanIndex >= 0 {
			where += fmt.Sprintf(" of plan #%d", h.PlanIndex+1)
		}
		if h.RunID > 0 {
			where += fmt.Sprintf(" (run %d)", h.RunID)
		}
		status := "ok"
		if !h.OK() {
			status = "FAILED: " + experiment.HookFailure(h)
		}
		s.printf("  %s: `%s` %.1f s, %s\n", where, h.Command, h.ElapsedS, status)
		if all && strings.TrimSpace(h.Output) != "" {
			for _, l := range strings.Split(strings.TrimRight(h.Output, "\n"), "\n") {
				s.printf("    | %s\n", l)
			}
		}
	}
	return nil
}

// brief cuts s to n characters with an ellipsis.
func brief(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
