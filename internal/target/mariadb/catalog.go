package mariadb

import (
	_ "embed"
	"sort"
	"strings"
	"sync"

	"github.com/tunebench/tunebench/internal/target"
)

// The settings catalogue an experiment file is checked against as it is
// read, before any server runs: MariaDB 10.11's system variables and which
// are read-only while it runs (variables.tsv). The server's own
// information_schema.SYSTEM_VARIABLES is the authority when the settings
// are applied (settings.go): a variable of a newer server that is missing
// here is accepted with allow_unknown_settings: true.

//go:embed variables.tsv
var variablesTSV string

var (
	catalogOnce sync.Once
	readOnly    map[string]bool
	names       []string
)

func loadCatalog() {
	readOnly = map[string]bool{}
	for _, line := range strings.Split(variablesTSV, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, ro, _ := strings.Cut(line, "\t")
		readOnly[name] = ro == "YES"
		names = append(names, name)
	}
	sort.Strings(names)
}

// managedVariables are what a managed server's option file sets: where it
// listens and keeps its files.
var managedVariables = map[string]bool{
	"datadir": true, "socket": true, "port": true, "bind_address": true, "pid_file": true, "log_error": true,
	"tmpdir": true, "secure_file_priv": true, "skip_name_resolve": true,
}

// Catalogue is the driver's settings catalogue (target.SettingsCatalog).
type Catalogue struct{}

// SettingsCatalog is the driver's catalogue (target.Cataloger).
func (Driver) SettingsCatalog() target.SettingsCatalog { return Catalogue{} }

// Setting: a known variable, and whether it needs a restart.
func (Catalogue) Setting(name string) (known, restart bool) {
	catalogOnce.Do(loadCatalog)
	ro, ok := readOnly[strings.ToLower(name)]
	return ok, ro
}

// SettingNames lists the variables.
func (Catalogue) SettingNames() []string {
	catalogOnce.Do(loadCatalog)
	return names
}

// Managed: the variables a managed server's option file sets.
func (Catalogue) Managed(name string) bool { return managedVariables[strings.ToLower(name)] }

// Product is "MariaDB".
func (Catalogue) Product() string { return "MariaDB" }
