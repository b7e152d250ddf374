package bench

import "os"

func tempDir() (string, error) { return os.MkdirTemp("", "workmap-bench-") }

func removeAll(dir string) { _ = os.RemoveAll(dir) }
