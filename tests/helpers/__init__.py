"""What the tests share: scripted servers, CLI runners, shared-data locators, documents, the slow-test guard."""
