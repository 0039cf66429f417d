//! Scripted API conversations against a mocked kube::Client (tower-test).
