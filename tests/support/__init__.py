"""What the tests share: paths, message builders, engines, processes, fakes and harnesses (one copy each)."""
