package envinfo

import (
	"context"
	"time"

	"github.com/shirou/gopsutil/v4/cpu"
	"github.com/shirou/gopsutil/v4/host"
	"github.com/shirou/gopsutil/v4/mem"
)

// portableHost fills what a machine without /proc and os-release (macOS,
// Windows) did not give, through gopsutil: the OS and its version, the
// kernel, the CPU model and cores, memory and swap.
func portableHost(h *Host) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if hi, err := host.InfoWithContext(ctx); err == nil {
		if h.Distro == "" && hi.Platform != "" {
			h.Distro = hi.Platform + " " + hi.PlatformVersion
		}
		if h.Kernel == "" {
			h.Kernel = hi.KernelVersion
		}
		if hi.VirtualizationRole == "guest" {
			h.Hypervisor = true
		}
	}
	if h.CPUModel == "" {
		if ci, err := cpu.InfoWithContext(ctx); err == nil && len(ci) > 0 {
			h.CPUModel = ci[0].ModelName
		}
	}
	if h.CPUCores == 0 {
		if n, err := cpu.CountsWithContext(ctx, false); err == nil {
			h.CPUCores = n
		}
	}
	if h.MemTotalBytes == 0 {
		if vm, err := mem.VirtualMemoryWithContext(ctx); err == nil {
			h.MemTotalBytes, h.MemAvailableBytes = int64(vm.Total), int64(vm.Available)
		}
	}
	if h.SwapTotalBytes == 0 {
		if sw, err := mem.SwapMemoryWithContext(ctx); err == nil {
			h.SwapTotalBytes = int64(sw.Total)
		}
	}
}
