//go:build !unix

package mariadb

import (
	"errors"
	"os"
	"os/exec"
)

// A managed MariaDB runs on Linux and macOS; elsewhere tunebench reaches an
// existing server by its address.

func detach(*exec.Cmd) {}

func terminate(int) error { return errors.New("a managed MariaDB is not supported on this system") }

const syscallNoFollow = 0

func flock(*os.File) error { return nil }
