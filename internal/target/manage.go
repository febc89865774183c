package target

import (
	"context"
	"io"
)

// ServerManager is a Driver that runs managed servers of its database in
// a directory of their own (`tunebench server start|stop|status|env`).
type ServerManager interface {
	Driver
	// Product names the database ("PostgreSQL", "MariaDB").
	Product() string
	// OwnsServerDir reports whether dir holds one of its managed servers.
	OwnsServerDir(dir string) bool
	StartServer(ctx context.Context, o ServerOptions) (ServerInfo, error)
	// StopServer stops the server (mode: smart, fast, immediate where the
	// database knows them) and says which settings it restored.
	StopServer(ctx context.Context, dir, mode string) (restored string, err error)
	ServerStatus(ctx context.Context, dir string) (ServerInfo, error)
	// ServerEnv are NAME=value lines for the database's own client tools
	// and tunebench (never the password itself: a file that holds it).
	ServerEnv(dir string) ([]string, error)
}

// ServerOptions say how to start a managed server.
type ServerOptions struct {
	Dir    string
	Port   int
	Listen string // another address to listen on (drivers on other machines)
	Bin    string // the directory of the server's programs
	RunAs  string
	// Settings are name=value, applied and verified once it runs.
	Settings []string
	Log      io.Writer
}

// ServerInfo is a managed server's state.
type ServerInfo struct {
	Running bool
	PID     int
	Port    int
	Version string
	Dir     string // its data
	// DSN is a connection string without a password.
	DSN string
	// Secret is the password, for the redactor only.
	Secret string
	// Restored says what settings a killed process left were restored.
	Restored string
}

// ServerManagerFor is the manager of the managed server in dir (the
// driver whose OwnsServerDir says so), or nil.
func ServerManagerFor(drivers []Driver, dir string) ServerManager {
	for _, d := range drivers {
		if m, ok := d.(ServerManager); ok && m.OwnsServerDir(dir) {
			return m
		}
	}
	return nil
}
