//go:build unix && !linux && !darwin

package hostfs

// renameNoReplace renames, failing with EEXIST when to exists.
func renameNoReplace(olddirfd int, from string, newdirfd int, to string) error {
	return renameIfAbsent(olddirfd, from, newdirfd, to)
}
