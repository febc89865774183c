//go:build windows

package tpch

import "time"

// threadCPU: 0 (Windows has no per-thread CPU clock through the standard
// library; the generation's CPU time is then not reported).
func threadCPU() time.Duration { return 0 }
