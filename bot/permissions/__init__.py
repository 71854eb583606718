"""Who may see what: Sift's access groups, the asker's identity, and the permission rule."""
