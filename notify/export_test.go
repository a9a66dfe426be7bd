package notify

// Name returns the run id the socket is named by.
func (l *Listener) Name() string { return l.name }
