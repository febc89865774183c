package mariadb

import (
	"os"
	"strings"
)

// optionFilePassword is the password an option file gives the client, as
// the mariadb client reads it: password= in its [client], [client-server],
// [client-mariadb] or [mariadb-client] section (the last one read wins);
// "" when the file or the key is missing.
func optionFilePassword(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	pw, in := "", false
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
		case line[0] == '[':
			name := strings.ToLower(strings.Trim(line, "[] \t"))
			in = name == "client" || name == "client-server" || name == "client-mariadb" || name == "mariadb-client"
		case in:
			k, v, ok := strings.Cut(line, "=")
			if !ok || strings.ReplaceAll(strings.ToLower(strings.TrimSpace(k)), "_", "-") != "password" {
				continue
			}
			v = strings.TrimSpace(v)
			if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
				v = v[1 : len(v)-1]
			}
			pw = v
		}
	}
	return pw
}
