//go:build !linux

package netio

import "context"

// Thread: direct connections are Linux-only, so there is nothing to do.
type Thread struct{}

// Tick does nothing on this system.
func (t *Thread) Tick() {}

// Pin is not supported on this system.
func (t *Thread) Pin(cpu int) bool { return false }

// KernelBound: see the Linux Thread.
func (t *Thread) KernelBound() {}

// Paced does nothing on this system.
func (t *Thread) Paced() {}

func (t *Thread) PaceFor(context.Context) {}

// Stop does nothing on this system.
func (t *Thread) Stop() {}

// EnsureProcs does nothing on this system.
func EnsureProcs(workers int) {}

// Batch reports false: no policy is set on this system.
func (t *Thread) Batch() bool { return false }
