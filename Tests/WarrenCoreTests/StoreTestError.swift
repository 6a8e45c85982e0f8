struct StoreTestError: Error {}
