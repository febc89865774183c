// Package tpcb is the pgbench-compatible TPC-B-like workload: the same four
// tables, the same scale factor meaning (100,000 accounts per scale unit) and
// the same three built-in scripts (tpcb-like, simple-update, select-only), so
// a tunebench result and a pgbench result compare one to one.
package tpcb

import "fmt"

// Sizes per scale unit, as pgbench defines them.
const (
	BranchesPerScale = 1
	TellersPerScale  = 10
	AccountsPerScale = 100000
	// BigintScale is the scale from which pgbench makes aid a bigint.
	BigintScale = 20000
)

// Script names, as pgbench's built-ins.
const (
	ScriptTPCB         = "tpcb-like"
	ScriptSimpleUpdate = "simple-update"
	ScriptSelectOnly   = "select-only"
)

// Scripts lists the scripts in display order.
func Scripts() []string { return []string{ScriptTPCB, ScriptSimpleUpdate, ScriptSelectOnly} }

// ValidScript reports whether s names a script.
func ValidScript(s string) error {
	for _, n := range Scripts() {
		if n == s {
			return nil
		}
	}
	return fmt.Errorf("unknown script %q: use tpcb-like, simple-update or select-only", s)
}
