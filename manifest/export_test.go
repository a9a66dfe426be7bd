package manifest

// Write is Publish with its sync: the manifest is durable when it returns.
func Write(path string, f *File) error {
	sync, err := Publish(path, f)
	if err != nil {
		return err
	}
	return sync()
}
