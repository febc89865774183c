//go:build !unix && !windows

package metrics

import "time"

// processCPU is not implemented on this platform; it returns 0.
func processCPU() time.Duration { return 0 }
