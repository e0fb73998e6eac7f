"""Time logic shared by live and replay views: cursor, best-so-far, moments, fits."""
