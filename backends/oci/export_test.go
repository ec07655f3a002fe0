package oci

// SetStateDir points the backend's state (bundles, runtime state,
// remembered root IDs) at dir.
func (b *Backend) SetStateDir(dir string) { b.stateDir = dir }

// RootIDFile is where image's root ID is remembered.
func (b *Backend) RootIDFile(image string) string {
	path, _ := b.rootIDFile(image)
	return path
}
