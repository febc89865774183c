//go:build !unix

package kernel

import "os"

// Kernel settings are Linux's (Machine.Supported refuses them elsewhere);
// these keep the package building.

func lock(*os.File) error     { return nil }
func unlock(*os.File) error   { return nil }
func canWrite(string) error   { return nil }
func isReadOnlyFS(error) bool { return false }
