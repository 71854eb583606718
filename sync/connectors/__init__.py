"""Knowledge sources: a folder of files, a platform's REST API."""
