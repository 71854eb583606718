"""The admin console under /admin: what Sift did with each question, and the levers to steer it."""
