package packagerevision_test

import (
	"os"
	"path/filepath"
)

func writeFile(dir, name, content string) error {
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, []byte(content), 0o644)
}

func chmod(path string) error { return os.Chmod(path, 0o755) }

func removeFile(path string) error { return os.Remove(path) }
