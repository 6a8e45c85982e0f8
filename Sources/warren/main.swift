print("warren")
